"""The paired statistics on hand-computed values (byog.evals.stats)."""

from __future__ import annotations

import math

import pytest

from byog.analysis import stats

# Student t quantiles (tables): t(0.95, 3), t(0.95, 4), t(0.975, 4), t(0.80, 4)
T95_3 = 2.353363
T95_4 = 2.131847
T975_4 = 2.776445
T80_4 = 0.940965


def test_inconclusive_with_hand_computed_intervals() -> None:
    # d_i = 0, 100, 0, 0 -> d = 25, sd = 50, SE = 25
    c = stats.paired_comparison([100, 100, 0, 100], [100, 0, 0, 100], margin=3.0)
    assert c.n == 4 and c.d == pytest.approx(25.0) and c.se_d == pytest.approx(25.0)
    assert c.ci90_low == pytest.approx(25 - T95_3 * 25, abs=1e-4)
    assert c.ci90_high == pytest.approx(25 + T95_3 * 25, abs=1e-4)
    assert c.ci95_low < 0 < c.ci95_high
    assert c.verdict == "inconclusive"
    assert c.z == pytest.approx(1.0) and c.within_1se is True


def test_different_when_ci95_excludes_zero_and_d_beyond_margin() -> None:
    base = [50.0] * 5
    cand = [60.0, 62.0, 58.0, 60.0, 60.0]  # d_i = 10, 12, 8, 10, 10 -> d 10, sd sqrt(2)
    c = stats.paired_comparison(cand, base, margin=3.0)
    se = math.sqrt(2) / math.sqrt(5)
    assert c.d == pytest.approx(10.0) and c.se_d == pytest.approx(se)
    assert c.ci95_low == pytest.approx(10 - T975_4 * se, abs=1e-4)
    assert c.verdict == "different"
    assert c.z == pytest.approx(10 / se) and c.within_1se is False
    assert c.mde == pytest.approx((T975_4 + T80_4) * se, abs=1e-4)
    from scipy.stats import t

    assert c.power == pytest.approx(max(0.0, 2 * t.cdf(3.0 / se - T95_4, 4) - 1), abs=1e-6)


def test_equivalent_when_ci90_inside_margin() -> None:
    base = [50.0] * 5
    cand = [50.5, 49.5, 50.0, 50.0, 50.0]  # d = 0, sd = sqrt(0.125)
    c = stats.paired_comparison(cand, base, margin=3.0)
    assert c.d == pytest.approx(0.0)
    assert c.ci90_low > -3.0 and c.ci90_high < 3.0
    assert c.verdict == "equivalent"
    # a margin narrower than the interval's half width is no longer equivalent
    half = T95_4 * math.sqrt(0.125) / math.sqrt(5)
    assert stats.paired_comparison(cand, base, margin=half * 0.9).verdict == "inconclusive"


def test_identical_scores_floor_se_at_one_discordant_item() -> None:
    few = stats.paired_comparison([100, 0, 100] * 7, [100, 0, 100] * 7, margin=3.0)  # n = 21
    assert few.d == 0.0 and few.se_d == pytest.approx(100 / 21) and few.z == 0.0 and few.within_1se is True
    assert few.verdict == "inconclusive" and few.power == 0.0  # 21 identical items prove little
    many = stats.paired_comparison([100.0, 0.0] * 200, [100.0, 0.0] * 200, margin=3.0)  # n = 400
    assert many.se_d == pytest.approx(0.25) and many.verdict == "equivalent" and many.power > 0.99
    # with K = 4 passes the smallest step is 25 points, so the floor is 4x smaller
    assert stats.paired_comparison([50.0] * 21, [50.0] * 21, 3.0, resolution=25.0).se_d == pytest.approx(25 / 21)


def test_constant_shift_uses_the_same_floor() -> None:
    cand, base = [55.0, 65.0] * 200, [50.0, 60.0] * 200  # d_i = 5 everywhere, n = 400, floor 0.25
    beyond = stats.paired_comparison(cand, base, margin=3.0)
    assert beyond.verdict == "different" and beyond.z == pytest.approx(20.0) and beyond.within_1se is False
    assert stats.paired_comparison(cand, base, margin=10.0).verdict == "equivalent"
    assert stats.paired_comparison(cand, base, margin=5.0).verdict == "inconclusive"  # CI90 reaches past 5


def test_too_few_items_is_inconclusive() -> None:
    c = stats.paired_comparison([100.0], [0.0], margin=3.0)
    assert c.verdict == "inconclusive" and c.se_d is None and c.power is None and c.d == 100.0
    assert stats.paired_comparison([], [], margin=3.0).d is None


def test_rejects_unpaired_or_bad_margin() -> None:
    with pytest.raises(ValueError):
        stats.paired_comparison([1.0, 2.0], [1.0], margin=3.0)
    with pytest.raises(ValueError):
        stats.paired_comparison([1.0, 2.0], [1.0, 2.0], margin=0.0)


def test_standard_error() -> None:
    assert stats.standard_error([0.0, 100.0]) == pytest.approx(50.0)  # sd 70.71 / sqrt 2
    assert stats.standard_error([42.0]) is None
