"""The paired statistics on hand-computed values (byog.evals.stats)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from byog.analysis import stats
from byog.schemas.evals import PairedComparison

# Student t quantiles (tables): t(0.95, 3), t(0.95, 4), t(0.975, 4), t(0.80, 4)
T95_3 = 2.353363
T95_4 = 2.131847
T975_4 = 2.776445
T80_4 = 0.940965
T95_609 = 1.647360  # t(0.95, 609)


def test_inconclusive_with_hand_computed_intervals() -> None:
    # two passes (scores in 50-point steps): d_i = 0, 50, 0, 0 -> d = 12.5, sd = 25, SE = 12.5
    c = stats.paired_comparison([100, 50, 0, 100], [100, 0, 0, 100], margin=3.0, resolution=50.0)
    assert c.method == "paired-t"  # not binary items: the paired t interval, as before
    assert c.n == 4 and c.d == pytest.approx(12.5) and c.se_d == pytest.approx(12.5)
    assert c.ci90_low == pytest.approx(12.5 - T95_3 * 12.5, abs=1e-4)
    assert c.ci90_high == pytest.approx(12.5 + T95_3 * 12.5, abs=1e-4)
    assert c.ci95_low < 0 < c.ci95_high
    assert c.verdict == "inconclusive"
    assert c.z == pytest.approx(1.0) and c.within_1se is True


def _binary(only_candidate: int, only_baseline: int, n: int) -> tuple[list[float], list[float]]:
    """Per-item scores of two servers (one pass, 0 or 100) with these discordant counts."""
    rest = n - only_candidate - only_baseline
    cand = [100.0] * only_candidate + [0.0] * only_baseline + [100.0, 0.0] * (rest // 2) + [0.0] * (rest % 2)
    base = [0.0] * only_candidate + [100.0] * only_baseline + [100.0, 0.0] * (rest // 2) + [0.0] * (rest % 2)
    return cand, base


def test_tango_interval_reproduces_the_published_example() -> None:
    # Cavo et al. (2012), complete response before and after consolidation therapy: the paired table
    # [[59, 6], [16, 80]], n = 161. Fagerland, Lydersen and Laake, "Statistical Analysis of Contingency
    # Tables" (2017), ch. 8 (and Stat Med 33:2850-2875, 2014), give Tango's asymptotic score 95% CI
    # for the difference: estimate -0.0621, -0.1240 to -0.0054 (the authors' R package contingencytables
    # prints the same in tests/testthat/test-ch8.R).
    low, high = stats.tango_interval(6, 16, 161, 0.95)
    assert (round(low / 100, 4), round(high / 100, 4)) == (-0.1240, -0.0054)
    c = stats.paired_comparison(*_binary(6, 16, 161), margin=3.0)
    assert c.method == "tango-score" and c.d == pytest.approx(-6.2112, abs=1e-4)
    assert (c.ci95_low, c.ci95_high) == pytest.approx((low, high))
    assert c.verdict == "different"  # the 95% interval excludes 0 and |d| = 6.2 > 3


def test_tango_statistic_at_zero_is_mcnemars_and_no_discordant_item_has_a_closed_form() -> None:
    assert float(stats.tango_z(15, 4, 610, 0.0)) == pytest.approx((15 - 4) / math.sqrt(19))
    # no discordant item: T(-M) = sqrt(n M / (1 - M)); 20 identical items prove little, 100 pass at 3 points
    assert float(stats.tango_z(0, 0, 20, -0.03)) == pytest.approx(math.sqrt(20 * 0.03 / 0.97))
    assert stats.paired_comparison([100.0, 0.0] * 10, [100.0, 0.0] * 10, margin=3.0).verdict == "inconclusive"
    assert stats.paired_comparison([100.0, 0.0] * 50, [100.0, 0.0] * 50, margin=3.0).verdict == "equivalent"


def test_the_equivalence_half_of_the_score_rule_alone_is_the_rules_own() -> None:
    # every (plus, minus) of 200 items at a 3-point margin: score_equivalent is score_stops' first half,
    # and it holds only where both one-sided statistics pass
    plus, minus = (a.ravel() for a in np.meshgrid(np.arange(0, 41), np.arange(0, 41)))
    e_z, c_z = stats.z_quantile(0.95), stats.z_quantile(0.975)
    equivalent = stats.score_equivalent(plus, minus, 200, 3.0, e_z)
    stops, different = stats.score_stops(plus, minus, 200, 3.0, e_z, c_z)
    assert np.array_equal(equivalent, stops) and 0 < equivalent.sum() < len(plus) and different.any()
    low, high = stats.tost_statistics(plus, minus, 200, 3.0)
    assert np.array_equal(equivalent, (low >= e_z) & (high >= e_z))
    assert not (equivalent & different).any()


def test_few_discordant_items_are_judged_by_the_score_interval() -> None:
    # 610 items, 15 only the candidate solved, 4 only the baseline: d = +1.80 points. The paired t
    # 90% interval ends at 2.98 < 3 ("equivalent" before); Tango's ends past 3: not proven.
    cand, base = _binary(15, 4, 610)
    diffs = [c - b for c, b in zip(cand, base, strict=True)]
    t_high = stats.mean(diffs) + T95_609 * stats.sample_sd(diffs) / math.sqrt(610)
    assert t_high < 3.0
    c = stats.paired_comparison(cand, base, margin=3.0)
    assert c.method == "tango-score" and c.ci90_high > 3.0 and c.verdict == "inconclusive"
    assert float(stats.tango_z(15, 4, 610, 0.03)) > -stats.z_quantile(0.95)  # the upper one-sided test fails
    # the same counts on several passes' scores (not binary) keep the paired t and its verdict
    assert stats.method_for([50.0, *cand[1:]], base, 100.0) == "paired-t"
    assert stats.method_for(cand, base, 50.0) == "paired-t"


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


def _comparison(d: float, se: float, n: int, margin: float = 5.0) -> PairedComparison:
    return stats.paired_comparison([0.0, 1.0], [0.0, 0.0], margin).model_copy(update={"d": d, "se_d": se, "n": n})


def test_a_stratum_contrast_is_welchs_t_on_the_two_strata_bonferroni_adjusted() -> None:
    from scipy import stats as sps

    point, reference = _comparison(-10.0, 2.0, 50), _comparison(0.0, 1.5, 60)
    one = stats.stratum_contrast(point, reference, 64, 1)
    df = (4 + 2.25) ** 2 / (16 / 49 + 2.25**2 / 59)  # Welch-Satterthwaite: 94.7
    assert (one.delta, one.se, one.df) == (-10.0, 2.5, math.floor(df))
    assert one.ci95_low == pytest.approx(-10 - sps.t.ppf(0.975, 94) * 2.5, rel=1e-12)
    assert one.ci90_high == pytest.approx(-10 + sps.t.ppf(0.95, 94) * 2.5, rel=1e-12)
    assert one.verdict == "different"
    three = stats.stratum_contrast(point, reference, 64, 1, contrasts=3)  # 3 contrasts share alpha
    assert three.ci95_low == pytest.approx(-10 - sps.t.ppf(1 - 0.025 / 3, 94) * 2.5, rel=1e-12)
    small = stats.stratum_contrast(_comparison(-4.0, 0.5, 50), reference, 64, 1)
    assert small.ci95_high is not None and small.ci95_high < 0
    assert small.verdict == "inconclusive"  # beyond noise, within the margin: not a material difference
    assert stats.stratum_contrast(_comparison(0.2, 0.5, 400), _comparison(0.0, 0.5, 400), 64, 1).verdict == (
        "equivalent"
    )
    alone = stats.paired_comparison([1.0], [0.0], 5.0)  # one item: no SE
    assert stats.stratum_contrast(alone, reference, 64, 1).verdict == "inconclusive"
