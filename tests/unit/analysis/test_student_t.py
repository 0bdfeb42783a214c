"""byog.analysis.student_t against scipy.stats.t (what the verdicts were computed with before):
quantiles and CDF within 1e-12 relative, and every number of a paired comparison unchanged to
1e-12 relative (or 1e-15 absolute, where scipy's own 2F - 1 is a difference of near-equal numbers)."""

from __future__ import annotations

import math
import random

import pytest

from byog.analysis import stats, student_t

scipy_t = pytest.importorskip("scipy.stats").t

DFS = [*range(1, 41), 50, 75, 100, 150, 199, 300, 500, 1000, 1318, 2000, 5000, 10_000]


def test_quantiles_match_scipy() -> None:
    worst = 0.0
    for df in DFS:
        for q in (0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 0.05, 0.025, 0.2):
            ours, theirs = student_t.ppf(q, df), float(scipy_t.ppf(q, df))
            worst = max(worst, abs(ours - theirs) / abs(theirs))
    print(f"worst relative difference of t quantiles from scipy: {worst:.1e}")
    assert worst <= 1e-12


def test_cdf_matches_scipy() -> None:
    worst = 0.0
    for df in DFS:
        for x in [i / 8 for i in range(-200, 400)]:
            ours, theirs = student_t.cdf(x, df), float(scipy_t.cdf(x, df))
            assert 0.0 <= ours <= 1.0
            if theirs > 1e-100:
                worst = max(worst, abs(ours - theirs) / theirs)
    print(f"worst relative difference of the t CDF from scipy (down to 1e-100): {worst:.1e}")
    assert worst <= 1e-12


def test_edges() -> None:
    assert student_t.ppf(0.5, 7) == 0.0 and student_t.ppf(1.0, 7) == math.inf and student_t.ppf(0.0, 7) == -math.inf
    assert student_t.cdf(0.0, 3) == 0.5 and student_t.cdf(math.inf, 3) == 1.0 and student_t.cdf(-math.inf, 3) == 0.0
    assert math.isnan(student_t.ppf(1.5, 3)) and math.isnan(student_t.cdf(1.0, 0))


def test_paired_comparisons_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    cases = []
    for n in (2, 3, 5, 20, 30, 198, 1319):
        for margin in (1.0, 3.0, 10.0):
            for passes in (1, 4):
                base = [100.0 * rng.randint(0, passes) / passes for _ in range(n)]
                cand = [b if rng.random() < 0.8 else 100.0 * rng.randint(0, passes) / passes for b in base]
                cases.append((cand, base, margin, 100.0 / passes))
    ours = [stats.paired_comparison(*case) for case in cases]
    monkeypatch.setattr(stats, "t_quantile", lambda q, df: float(scipy_t.ppf(q, df)))
    monkeypatch.setattr(stats, "_t_cdf", lambda x, df: float(scipy_t.cdf(x, df)))
    theirs = [stats.paired_comparison(*case) for case in cases]
    compared = 0
    for a, b in zip(ours, theirs):
        assert a.verdict == b.verdict and a.within_1se == b.within_1se
        for name in ("d", "se_d", "ci90_low", "ci90_high", "ci95_low", "ci95_high", "z", "power", "mde"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None) == (y is None)
            if x is not None:
                assert math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-15), (name, x, y)
                compared += 1
    print(f"{len(cases)} paired comparisons, {compared} numbers within 1e-12 of the scipy-based ones")
