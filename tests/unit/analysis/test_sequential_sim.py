"""The Monte Carlo of the sequential gate, at fewer trials than benchmarks/eval_sequential.py: the level, loosely."""

from __future__ import annotations

from byog.analysis.sequential_sim import design_n, simulate


def test_sequential_gate_keeps_its_level_and_saves_items() -> None:
    cell = simulate(discordance=0.2, margin=3.0, fractions=(0.5, 0.75, 1.0), trials=600, seed=7)
    assert cell.n == design_n(0.2, 3.0) == 2410
    assert 0.05 - 0.03 < cell.false_equivalence < 0.05 + 0.03  # 600 trials: SE ~0.9 points
    assert 0.05 - 0.03 < cell.difference_level < 0.05 + 0.03
    assert cell.false_difference <= cell.difference_level
    assert cell.power > 0.8
    assert cell.items_saved_equal > 0.1  # identical servers mostly stop at half or three quarters


def test_one_look_design_saves_nothing() -> None:
    cell = simulate(discordance=0.2, margin=3.0, fractions=(1.0,), trials=300, seed=7)
    assert cell.items_saved_equal == 0.0 and cell.items_saved_margin == 0.0
