"""Paired statistics for the accuracy verdict: the one home of every eval formula (docs/statistics.md §1).

Inputs are per-item scores in points (0-100), each the mean over the K passes of that item, for
the candidate and the baseline on the same items in the same order.

- d_i = cand_i - base_i;  d = mean(d_i);  SE_d = sd(d_i) / sqrt(n)   (sd with n-1)
- **equivalent** when the 90% CI  d +/- t(0.95, n-1) SE_d  lies strictly inside (-margin, +margin)
  (two one-sided tests, alpha 0.05 each);
- **different** when the 95% CI  d +/- t(0.975, n-1) SE_d  excludes 0 *and* |d| > margin;
- otherwise **inconclusive**.
- ``within_1se``: the write-up's rule |d| <= 1 x SE_d; ``z`` = d / SE_d.
- ``power``: the probability that the TOST declares "equivalent" when the true difference is 0,
  at this margin and this SE_d:  2 F_t(margin / SE_d - t(0.95, n-1); n-1) - 1, floored at 0
  (F_t = Student t CDF; the usual approximation that treats SE_d as known).
- ``mde``: the minimum detectable effect, the true |difference| that a two-sided test at 0.05
  detects with 80% power:  (t(0.975, n-1) + t(0.80, n-1)) SE_d.

What the gate means (used by the report and the claims check): a claim "just as accurate"
passes only on **equivalent**; **different** and **inconclusive** both fail it. "False fail" =
identical servers not declared equivalent; "flagged" = a server whose true score differs by one
margin not declared equivalent (the TOST caps that at 5% whatever n is; the binding requirement
is enough items and passes that identical servers pass). ``byog.analysis.gate_power`` predicts both
rates before a run and simulates them through ``paired_comparison`` (docs/statistics.md).

SE_d = 0 (every d_i equal, e.g. two greedy servers with identical answers on every item) is a
degenerate estimate, not proof: 20 identical items say little about the other 1,299. So SE_d is
floored at ``resolution / n``, the SE that one discordant item would give (a vector of n - 1 equal
differences and one that is off by ``resolution`` has sd = resolution / sqrt(n)); ``resolution``
is the smallest step a per-item score can take, 100 / K points for exact match averaged over K
passes (the summary passes it). The floored value is what ``se_d`` reports and what the CIs,
z, power and MDE use, so 20 identical items stay "inconclusive" at a 3-point margin while
1,319 identical items are "equivalent".
n < 2: no variance can be estimated; the verdict is "inconclusive" and the SE-based fields are None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from byog.schemas.evals import PairedComparison, Verdict

ALPHA = 0.05  # each one-sided test of the TOST; the difference test is two-sided at the same alpha
POWER_TARGET = 0.80  # for the minimum detectable effect


def t_quantile(q: float, df: int) -> float:
    """The Student t quantile (scipy.stats.t.ppf), without scipy.stats' import."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def _t_cdf(x: float, df: int) -> float:
    """The Student t CDF (scipy.stats.t.cdf), without scipy.stats' import."""
    from scipy.special import stdtr

    return float(stdtr(df, x))


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def sample_sd(values: Sequence[float]) -> float:
    """Standard deviation with n-1 in the denominator (0 for fewer than 2 values)."""
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


def standard_error(values: Sequence[float]) -> float | None:
    """SE of the mean of per-item scores; None for fewer than 2 items."""
    return sample_sd(values) / math.sqrt(len(values)) if len(values) >= 2 else None


def decide(d: float, ci90: tuple[float, float], ci95: tuple[float, float], margin: float) -> Verdict:
    """The three-way rule, on already computed intervals."""
    if -margin < ci90[0] and ci90[1] < margin:
        return "equivalent"
    if (ci95[0] > 0 or ci95[1] < 0) and abs(d) > margin:
        return "different"
    return "inconclusive"


def tost_power(margin: float, se_d: float, n: int, alpha: float = ALPHA) -> float:
    """P(TOST says equivalent | true difference 0), for SE_d > 0."""
    t_crit = t_quantile(1 - alpha, n - 1)
    return max(0.0, 2 * _t_cdf(margin / se_d - t_crit, n - 1) - 1)


def minimum_detectable_effect(se_d: float, n: int, alpha: float = ALPHA, power: float = POWER_TARGET) -> float:
    return (t_quantile(1 - alpha / 2, n - 1) + t_quantile(power, n - 1)) * se_d


def paired_comparison(
    candidate: Sequence[float], baseline: Sequence[float], margin: float, resolution: float = 100.0
) -> PairedComparison:
    """Compare per-item scores (points, item order shared) against an equivalence margin (points).

    ``resolution``: the smallest step of a per-item score in points (100 / K for exact match over
    K passes); it sets the floor of SE_d when every d_i is equal (see the module docstring).
    """
    if len(candidate) != len(baseline):
        raise ValueError(f"paired scores need the same items: {len(candidate)} candidate vs {len(baseline)} baseline")
    if margin <= 0:
        raise ValueError("the equivalence margin must be positive")
    n = len(candidate)
    diffs = [c - b for c, b in zip(candidate, baseline, strict=True)]
    if n < 2:
        d = diffs[0] if diffs else None
        return PairedComparison(
            n=n,
            margin=margin,
            d=d,
            se_d=None,
            ci90_low=None,
            ci90_high=None,
            ci95_low=None,
            ci95_high=None,
            verdict="inconclusive",
            within_1se=None,
            z=None,
            power=None,
            mde=None,
        )
    d = mean(diffs)
    se_d = sample_sd(diffs) / math.sqrt(n)
    if se_d == 0:
        se_d = resolution / n  # one discordant item's worth: identical scores are not proof
    t90 = t_quantile(1 - ALPHA, n - 1)
    t95 = t_quantile(1 - ALPHA / 2, n - 1)
    ci90 = (d - t90 * se_d, d + t90 * se_d)
    ci95 = (d - t95 * se_d, d + t95 * se_d)
    z = d / se_d
    within = abs(d) <= se_d
    return PairedComparison(
        n=n,
        margin=margin,
        d=d,
        se_d=se_d,
        ci90_low=ci90[0],
        ci90_high=ci90[1],
        ci95_low=ci95[0],
        ci95_high=ci95[1],
        verdict=decide(d, ci90, ci95, margin),
        within_1se=within,
        z=z,
        power=tost_power(margin, se_d, n),
        mde=minimum_detectable_effect(se_d, n),
    )
