"""Degenerate accuracy comparisons are named (byog.analysis.degenerate), by hand-made cases."""

from __future__ import annotations

from byog.analysis.degenerate import degenerate_cases
from byog.analysis.stats import paired_comparison


def _reasons(**kw) -> list[str]:
    return [d.reason for d in degenerate_cases(**kw)]


def test_gsm8k_at_zero_on_both_servers_is_a_floor_not_an_equivalence() -> None:
    zeros = [0.0] * 100
    gate = paired_comparison(zeros, zeros, margin=3.0)
    assert gate.verdict == "equivalent"  # what the report said on the H200 with dummy weights
    found = degenerate_cases(
        candidate_score=0.0, baseline_score=0.0, n=100, discordant=0, margin=3.0, resolution=100.0, t95=1.66
    )
    assert [d.reason for d in found] == ["floor"]
    assert "solves nothing" in found[0].why


def test_ceiling_and_healthy_scores() -> None:
    assert _reasons(
        candidate_score=98.0, baseline_score=99.0, n=500, discordant=5, margin=3.0, resolution=100.0, t95=1.65
    ) == ["ceiling"]
    assert (
        _reasons(
            candidate_score=70.0, baseline_score=71.0, n=500, discordant=40, margin=3.0, resolution=100.0, t95=1.65
        )
        == []
    )
    # one server near the floor, the other not: a real difference, not a degenerate task
    assert (
        _reasons(
            candidate_score=1.0, baseline_score=60.0, n=500, discordant=300, margin=3.0, resolution=100.0, t95=1.65
        )
        == []
    )


def test_no_discordant_items_only_counts_at_small_n() -> None:
    small = _reasons(
        candidate_score=50.0, baseline_score=50.0, n=20, discordant=0, margin=3.0, resolution=100.0, t95=1.729
    )
    large = _reasons(
        candidate_score=50.0, baseline_score=50.0, n=400, discordant=0, margin=3.0, resolution=100.0, t95=1.649
    )
    assert small == ["no_discordant"] and large == []


def test_baseline_below_the_plans_reference() -> None:
    found = _reasons(
        candidate_score=30.0,
        baseline_score=31.0,
        n=500,
        discordant=40,
        margin=3.0,
        resolution=100.0,
        t95=1.65,
        min_baseline_score=60.0,
    )
    assert found == ["below_reference"]
    assert (
        _reasons(
            candidate_score=70.0,
            baseline_score=71.0,
            n=500,
            discordant=40,
            margin=3.0,
            resolution=100.0,
            t95=1.65,
            min_baseline_score=60.0,
        )
        == []
    )
