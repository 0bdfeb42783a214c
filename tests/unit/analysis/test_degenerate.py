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


def test_no_discordant_binary_items_follow_the_score_interval() -> None:
    # one pass, right or wrong: Tango's T(-M) with no discordant item is sqrt(n m / (1 - m)), m = 0.03;
    # it reaches z(0.95) = 1.645 from n = 88, where the floored paired t already passed at n = 55
    healthy = {"candidate_score": 70.0, "baseline_score": 70.0, "discordant": 0, "margin": 3.0, "resolution": 100.0}
    few = degenerate_cases(n=87, t95=1.66, method="tango-score", **healthy)
    assert [d.reason for d in few] == ["no_discordant"] and "needs 88" in few[0].why
    assert _reasons(n=88, t95=1.66, method="tango-score", **healthy) == []
    assert _reasons(n=87, t95=1.66, **healthy) == []  # the paired t's rule: 1.66 x 100 / 87 < 3
    cand = [100.0, 0.0] * 43 + [100.0]
    assert paired_comparison(cand, cand, 3.0).verdict == "inconclusive"  # the gate agrees at 87
    assert paired_comparison([*cand, 0.0], [*cand, 0.0], 3.0).verdict == "equivalent"  # and at 88
