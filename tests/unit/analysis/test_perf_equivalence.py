"""Launch-to-launch statistics (byog.analysis.perf_equivalence): hand-computed values, then
simulations of servers whose launches differ (seeded, a few hundred repetitions)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from byog.analysis import perf_equivalence as pe

Z = pe.Z975


def test_aa_margin_is_z_times_rms_with_a_floor() -> None:
    a = [0.03, -0.04, 0.0]
    assert pe.aa_margin(a) == pytest.approx(Z * math.sqrt((0.03**2 + 0.04**2) / 3))
    assert pe.aa_margin([0.0, 0.001]) == pe.MIN_MARGIN
    assert pe.aa_margin([]) is None


@pytest.mark.parametrize(
    "ratio, ci90, ci95, higher, expected",
    [
        (1.01, (0.99, 1.03), (0.985, 1.035), True, "equivalent"),
        (1.20, (1.12, 1.28), (1.10, 1.30), True, "faster"),
        (1.20, (1.12, 1.28), (1.10, 1.30), False, "slower"),  # a latency 20% higher is slower
        (0.80, (0.75, 0.85), (0.74, 0.86), False, "faster"),
        (1.04, (1.02, 1.06), (1.01, 1.07), True, "within noise"),  # beyond 1 but not beyond the margin
        (1.10, (0.95, 1.25), (0.90, 1.30), True, "within noise"),  # too wide to tell
    ],
)
def test_label(ratio, ci90, ci95, higher, expected) -> None:
    assert pe.label(ratio, ci90, ci95, margin=math.log(1.05), higher_is_better=higher) == expected


def test_label_without_a_ci_is_within_noise() -> None:
    assert pe.label(1.5, None, None, 0.05, True) == "within noise"


@pytest.mark.parametrize("sizes", [[4, 4, 4], [4, 2, 3]])
def test_hierarchical_rows_take_whole_launches(sizes: list[int]) -> None:
    starts = np.concatenate([[0], np.cumsum(sizes)])
    launch_of = np.repeat(np.arange(len(sizes)), sizes)
    for row in pe.hierarchical_rows(sizes, 50, np.random.default_rng(3)):
        blocks, at = [], 0
        while at < row.size:  # each block is one drawn launch: sizes[l] units of launch l only
            launch = launch_of[row[at]]
            block = row[at : at + sizes[launch]]
            assert set(launch_of[block]) == {launch} and block.min() >= starts[launch]
            blocks.append(launch)
            at += sizes[launch]
        assert len(blocks) == len(sizes)
    assert max(int(r.max()) for r in pe.hierarchical_rows([5], 20, np.random.default_rng(1))) < 5


def test_between_launch_share_by_hand() -> None:
    # launch means 1 and 3 (grand 2), within variance 1: MSB = 3*(1+1)/1 = 6, MSW = 1, n0 = 3
    share = pe.between_launch_share([[0.0, 1.0, 2.0], [2.0, 3.0, 4.0]])
    assert share is not None
    assert share.between_var == pytest.approx((6 - 1) / 3) and share.within_var == pytest.approx(1.0)
    assert share.share == pytest.approx((5 / 3) / (5 / 3 + 1))
    assert pe.between_launch_share([[1.0, 2.0, 3.0]]) is None  # one launch
    assert pe.between_launch_share([[1.0], [2.0]]) is None  # no replicate inside a launch
    assert pe.between_launch_share([[1.0, 1.0], [1.0, 1.0]]) is None  # no variance


def _side(
    rng: np.random.Generator, launches: int, waves: int, launch_sd: float, wave_sd: float, level: float = 100.0
) -> list[list[float]]:
    return [list(level * np.exp(rng.normal(0, launch_sd) + rng.normal(0, wave_sd, waves))) for _ in range(launches)]


def _mean_rows(launches: list[list[float]]):
    flat = np.array([u for launch in launches for u in launch])
    return lambda rows: flat[rows].mean(axis=1)


def _coverage(launches: int, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    covered = 0
    for rep in range(reps):
        cand, base = _side(rng, launches, 5, 0.05, 0.01), _side(rng, launches, 5, 0.05, 0.01)
        ci = pe.hierarchical_ratio_ci(
            cand,
            base,
            lambda u: float(np.mean(u)),
            [seed, rep],
            resamples=400,
            stat_rows=(_mean_rows(cand), _mean_rows(base)),
        )
        covered += ci.ci95[0] <= 1.0 <= ci.ci95[1]
    return covered / reps


def test_hierarchical_ci_covers_launch_noise_a_single_launch_misses() -> None:
    """Launch sd 5%, wave sd 1%, true ratio 1: one launch's wave CI almost never covers it;
    5 launches per side cover it near the nominal 95% (the bootstrap of few clusters runs a
    little narrow: (R - 1) / R of the launch variance)."""
    one, five = _coverage(1, 150, 1), _coverage(5, 150, 2)
    print(f"\ncoverage of the true ratio: 1 launch {one:.2f}, 5 launches {five:.2f}")
    assert one < 0.3
    assert five > 0.8


def test_share_recovers_a_known_split() -> None:
    rng = np.random.default_rng(4)
    shares = [pe.between_launch_share(_side(rng, 10, 5, 0.03, 0.03)).share for _ in range(100)]
    print(f"\nmean share {np.mean(shares):.3f} (true 0.5)")
    assert abs(float(np.mean(shares)) - 0.5) < 0.08


def test_aa_margin_keeps_identical_servers_out_of_faster_and_slower() -> None:
    """R = 1 per server, launch sd 3%: with the A/A margin an identical candidate is called faster
    or slower on few points; with the 1% floor as margin (no A/A) on most (the control)."""
    rng = np.random.default_rng(6)
    with_aa = without = total = 0
    for rep in range(40):
        points = []
        for _ in range(8):
            a1, a2, cand = (_side(rng, 1, 5, 0.03, 0.005) for _ in range(3))
            points.append((a1, a2, cand))
        margin = pe.aa_margin([math.log(np.mean(a2[0]) / np.mean(a1[0])) for a1, a2, _ in points])
        for a1, _, cand in points:
            ci = pe.hierarchical_ratio_ci(
                cand,
                a1,
                lambda u: float(np.mean(u)),
                [rep],
                resamples=300,
                stat_rows=(_mean_rows(cand), _mean_rows(a1)),
            )
            ratio = float(np.mean(cand[0]) / np.mean(a1[0]))
            with_aa += pe.label(ratio, ci.ci90, ci.ci95, margin, True) in ("faster", "slower")
            without += pe.label(ratio, ci.ci90, ci.ci95, pe.MIN_MARGIN, True) in ("faster", "slower")
            total += 1
    print(
        f"\nidentical candidate called faster/slower: A/A margin {with_aa / total:.3f}, 1% margin {without / total:.3f}"
    )
    assert with_aa / total < 0.12
    assert without / total > 0.5


def test_launch_t_ci_by_hand() -> None:
    # ln stat per launch: candidate 0.1, 0.3 (ss 0.02), baseline 0.0, 0.2, 0.1 (ss 0.02): df 3
    ci = pe.launch_t_ci([0.1, 0.3], [0.0, 0.2, 0.1], ratio=1.2)
    assert ci is not None and ci.df == 3
    se = math.sqrt(0.04 / 3 * (1 / 2 + 1 / 3))
    assert ci.se == pytest.approx(se)
    half = 3.182446305284263 * se  # t(0.975, 3)
    assert ci.ci95 == pytest.approx((1.2 * math.exp(-half), 1.2 * math.exp(half)))
    assert pe.launch_t_ci([0.1], [0.2], ratio=1.0) is None  # one launch each: no degree of freedom
    with_prior = pe.launch_t_ci([0.1], [0.2], ratio=1.0, prior=pe.LaunchVariance(var=0.01, df=4))
    assert with_prior is not None and with_prior.df == 4 and with_prior.se == pytest.approx(math.sqrt(0.01 * 2))


def test_ci_notes_say_one_launch_once_per_pair() -> None:
    from byog.schemas.bench import PointComparison

    def comparison(point: str, note: str | None) -> PointComparison:
        return PointComparison(
            point_id=point, candidate="c", baseline="b", metric="decode_tok_s", candidate_value=1.0,
            baseline_value=1.0, ratio=1.0, ci_level=0.95, units="waves", ci_note=note,
        )  # fmt: skip

    notes = pe.ci_notes([comparison("p1", pe.ONE_LAUNCH_NOTE), comparison("p2", pe.ONE_LAUNCH_NOTE)])
    assert notes == [
        "95% CI, c vs b: waves of one launch: launch-to-launch variance not included; performance labels: screening"
    ]
    assert pe.ci_notes([comparison("p1", None)]) == []
