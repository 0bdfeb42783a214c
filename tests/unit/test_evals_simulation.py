"""The gate, tested by simulation (issue 4 item 6): it prints the rates it measured.

Identical servers (per-item Bernoulli scores from a fixed difficulty profile) must be declared
equivalent in >= 95% of >= 500 comparisons (false-fail rate <= 5%), and a candidate whose true
score is one margin lower must be flagged (not equivalent) in >= 80%, with each task's
recommended K passes and n items (byog.evals.tasks). "Gate passes" = verdict "equivalent";
"false fail" and "flagged" = verdict "different" or "inconclusive" (see byog.evals.stats).
Sampled tasks draw every pass afresh; greedy tasks (temperature 0) repeat the server's answer,
and an identical server re-draws 5% of items (numeric nondeterminism): a pessimistic rate.
"""

from __future__ import annotations

import pytest

from byog.evals.stats import difficulty_profile, simulate_gate
from byog.evals.tasks import TASKS

COMPARISONS = 500
GREEDY_FLIP_RATE = 0.05


@pytest.mark.parametrize("name", ["gsm8k", "gsm8k_cot_chat", "aime25", "gpqa_diamond", "mrcr"])
def test_gate_rates_at_recommended_k(name: str) -> None:
    task = TASKS[name]
    accuracy, concentration = task.sim_profile
    p = difficulty_profile(task.recommended_items, accuracy, concentration, seed=7)
    rates = simulate_gate(
        p, task.recommended_passes, task.default_margin, COMPARISONS, seed=1,
        greedy_flip_rate=None if task.sampled else GREEDY_FLIP_RATE,
    )
    print(
        f"\n{name}: n={task.recommended_items} K={task.recommended_passes} margin={task.default_margin} "
        f"{'sampled' if task.sampled else 'greedy'}: false-fail {rates.false_fail_rate:.3f} "
        f"(different {rates.false_different_rate:.3f}), flagged at one margin {rates.flagged_rate:.3f} "
        f"(different {rates.shifted_different_rate:.3f}) over {rates.comparisons} comparisons"
    )
    assert rates.comparisons >= 500
    assert rates.false_fail_rate <= 0.05
    assert rates.flagged_rate >= 0.80


def test_too_few_passes_fail_identical_servers() -> None:
    """The simulation can fail: AIME25 with one sampled pass cannot show equivalence."""
    task = TASKS["aime25"]
    p = difficulty_profile(task.recommended_items, *task.sim_profile, seed=7)
    rates = simulate_gate(p, 1, task.default_margin, 200, seed=1)
    print(f"\naime25 with K=1: false-fail {rates.false_fail_rate:.3f}")
    assert rates.false_fail_rate > 0.5
