"""Performance equivalence across server launches: the launch t interval, the one-launch wording,
the between-launch share of the variance, the A/A margin and the per-point label
(docs/statistics.md §6-7).

Why: a bootstrap over the waves of one launch leaves out what changes from one launch to the
next (placement, clocks, compile and autotune choices), so its CI is too narrow for a claim.
Two remedies, usable together:

- **R launches per server** (plan ``launches: R``): the CI of a candidate/baseline ratio is the
  launch t interval (``launch_t_ci``). With z_sl = ln stat(units of launch l of side s), R_c
  candidate and R_b baseline launches, and an optional calibration (s_cal^2, df_cal) of the same
  quantity on the same fingerprint:
      s_p^2 = (sum_s sum_l (z_sl - zbar_s)^2 + df_cal s_cal^2) / df,   df = (R_c - 1) + (R_b - 1) + df_cal
      SE = s_p sqrt(1/R_c + 1/R_b),   CI = ratio x exp(+/- t(1 - alpha/2, df) SE)
  with ratio = stat(every candidate unit) / stat(every baseline unit). This is the one-way
  random-effects (ANOVA) interval on launch log-statistics: Var(zbar_s) = sigma_b^2 / R +
  sigma_w^2 / (R W) is estimated by the spread of the launch values themselves, whatever the
  between-launch share, so with normal log-statistics of equal variance on both sides it is exact
  at any R (docs/statistics.md §6: 94-96% in simulation at R = 2, 3, 5, shares 0-0.9). The 90%
  CI (the TOST below) takes t(0.95, df). The
  two sides' spreads are pooled (one machine, one kind of launch noise), which also lets a side
  with one launch (the candidate beside an A/A baseline) borrow the other's. The hierarchical
  bootstrap below (draw R launches, then each drawn launch's waves) is what summaries before
  schema 7 hold, and the simulation's control: a bootstrap of R clusters keeps (R - 1)/R of their
  variance, and its percentiles ignore that R - 1 launches estimate it, so it covers ~85% at R = 3.
- **one launch per side, no calibration**: no launch variance can be estimated; the CI is the
  plain wave bootstrap, labelled ``ONE_LAUNCH_NOTE`` everywhere it is shown, and no comparison
  gets a label stronger than "screening".
- **an A/A pair** (the baseline launched twice): for each point, a_p = ln(stat(A2) / stat(A1))
  is a draw of the difference two launches of one server show. The margin of a metric is
  delta = max(MIN_MARGIN, z(0.975) x sqrt(mean_p a_p^2)): 95% of A/A log-ratios fall inside
  +/- delta when they are normal with mean 0. A candidate inside it is as close to the baseline
  as the baseline is to itself.

Each point and metric with an A/A margin is then labelled from ln(ratio) and its 90% and 95%
CIs, with "better" meaning higher for throughputs and lower for latencies:
- **equivalent**: the 90% CI lies inside (-delta, +delta) (TOST, alpha 0.05 each side);
- **faster** / **slower**: the 95% CI excludes 0 and ln(ratio) is beyond +/- delta on the better
  / worse side;
- **within noise**: anything else (the difference is not told apart from launch noise).

Between-launch share (one-way random effects, ANOVA estimator, unbalanced): with y_lj the
statistic of unit j of launch l (R launches, N units, n_l per launch),
MSB = sum_l n_l (ybar_l - ybar)^2 / (R - 1),  MSW = sum_lj (y_lj - ybar_l)^2 / (N - R),
n0 = (N - sum_l n_l^2 / N) / (R - 1),  s_b^2 = max(0, (MSB - MSW) / n0),  s_w^2 = MSW,
share = s_b^2 / (s_b^2 + s_w^2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeVar

import numpy as np

from byog.analysis.stats import t_quantile
from byog.schemas.bench import PointComparison

Label = Literal["faster", "slower", "equivalent", "within noise", "screening"]
U = TypeVar("U")

# The one wording of a CI that leaves launch-to-launch variance out: every surface prints this.
ONE_LAUNCH_NOTE = "waves of one launch: launch-to-launch variance not included"
MIN_MARGIN = 0.01  # ln-ratio floor of an A/A margin (about 1%): a lucky A/A never gives a zero margin
Z975 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 1000


def ci_notes(comparisons: Sequence[PointComparison]) -> list[str]:
    """The words every surface prints beside the perf CIs: per pair, what its 95% CIs leave out
    (``ONE_LAUNCH_NOTE``, with "labels: screening") or the calibration they cite; "N of M points"
    where only some of the pair's points have that CI (a workload on fewer launches)."""
    points: dict[tuple[str, str], set[str]] = {}
    noted: dict[tuple[str, str, str], set[str]] = {}
    for c in comparisons:
        points.setdefault((c.candidate, c.baseline), set()).add(c.point_id)
        if c.ci_note:
            noted.setdefault((c.candidate, c.baseline, c.ci_note), set()).add(c.point_id)
    lines = []
    for (candidate, baseline, note), ids in noted.items():
        tail = "; performance labels: screening" if note == ONE_LAUNCH_NOTE else ""
        total = len(points[(candidate, baseline)])
        some = "" if len(ids) == total else f", {len(ids)} of {total} points"
        lines.append(f"95% CI, {candidate} vs {baseline}{some}: {note}{tail}")
    return lines


# --- the A/A margin and the label -----------------------------------------------------------------


def aa_margin(log_ratios: Sequence[float]) -> float | None:
    """delta = max(MIN_MARGIN, z(0.975) sqrt(mean a_p^2)) over the A/A log-ratios of one metric."""
    values = [a for a in log_ratios if a is not None and math.isfinite(a)]
    if not values:
        return None
    return max(MIN_MARGIN, Z975 * math.sqrt(math.fsum(a * a for a in values) / len(values)))


def label(
    ratio: float,
    ci90: tuple[float, float] | None,
    ci95: tuple[float, float] | None,
    margin: float,
    higher_is_better: bool,
) -> Label:
    """The four-way label of one ratio (candidate / baseline) against a ln-ratio margin."""
    if ci90 is None or ci95 is None or ratio <= 0:
        return "within noise"
    sign = 1.0 if higher_is_better else -1.0
    est = sign * math.log(ratio)
    lo90, hi90 = sorted(sign * math.log(x) for x in ci90)
    lo95, hi95 = sorted(sign * math.log(x) for x in ci95)
    if -margin < lo90 and hi90 < margin:
        return "equivalent"
    if lo95 > 0 and est > margin:
        return "faster"
    if hi95 < 0 and est < -margin:
        return "slower"
    return "within noise"


# --- the hierarchical bootstrap -----------------------------------------------------------------------


def hierarchical_rows(sizes: Sequence[int], resamples: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Two-stage resamples: index rows into the launches' units laid end to end (launch-major).

    Per resample, draw len(sizes) launches with replacement, then for each drawn launch l,
    sizes[l] of its units with replacement. With one launch this is the plain bootstrap. When
    every launch has W units the draws are made as two arrays (launches, then units), else
    resample by resample; either way the same seed gives the same rows.
    """
    r = len(sizes)
    if len(set(sizes)) == 1:
        w = sizes[0]
        launches = rng.integers(0, r, (resamples, r))
        units = rng.integers(0, w, (resamples, r, w))
        return list((launches[:, :, None] * w + units).reshape(resamples, r * w))
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    rows = []
    for _ in range(resamples):
        drawn = rng.integers(0, r, r)
        rows.append(
            np.concatenate([offsets[launch] + rng.integers(0, sizes[launch], sizes[launch]) for launch in drawn])
        )
    return rows


@dataclass(frozen=True)
class RatioCI:
    ci90: tuple[float, float] | None
    ci95: tuple[float, float] | None
    resamples: int  # resamples with a finite ratio


def hierarchical_ratio_ci(
    cand: Sequence[Sequence[U]],
    base: Sequence[Sequence[U]],
    stat: Callable[[list[U]], float | None],
    seed: Sequence[int],
    resamples: int = BOOTSTRAP_RESAMPLES,
    stat_rows: tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]] | None = None,
) -> RatioCI:
    """Percentile CIs (90% and 95%) of stat(cand) / stat(base), each side resampled by
    ``hierarchical_rows`` (all candidate rows, then all baseline rows, from one seeded generator).

    ``cand`` / ``base``: per launch, that launch's units. None when a side has fewer than two
    units in all (no noise estimate) or fewer than half the resamples give a finite ratio.
    ``stat_rows`` (candidate, baseline): the statistic on a matrix of index rows at once, used
    when every launch of a side has the same number of units (the rows are then equally long).
    """
    c_sizes, b_sizes = [len(x) for x in cand], [len(x) for x in base]
    if sum(c_sizes) < 2 or sum(b_sizes) < 2 or 0 in c_sizes or 0 in b_sizes:
        return RatioCI(None, None, 0)
    rng = np.random.default_rng(list(seed))
    c_rows = hierarchical_rows(c_sizes, resamples, rng)
    b_rows = hierarchical_rows(b_sizes, resamples, rng)
    c_flat = [u for launch in cand for u in launch]
    b_flat = [u for launch in base for u in launch]
    if stat_rows is not None and len(set(c_sizes)) == 1 and len(set(b_sizes)) == 1:
        sc, sb = stat_rows[0](np.stack(c_rows)), stat_rows[1](np.stack(b_rows))
        keep = np.isfinite(sc) & np.isfinite(sb) & (sb != 0)
        ratios = sc[keep] / sb[keep]
    else:
        out = []
        for c_idx, b_idx in zip(c_rows, b_rows, strict=True):
            sc_one, sb_one = stat([c_flat[i] for i in c_idx]), stat([b_flat[i] for i in b_idx])
            if sc_one is not None and sb_one:
                out.append(sc_one / sb_one)
        ratios = np.asarray(out, dtype=float)
    if ratios.size < resamples // 2:
        return RatioCI(None, None, int(ratios.size))
    q = np.percentile(ratios, [5.0, 95.0, 2.5, 97.5])
    return RatioCI((float(q[0]), float(q[1])), (float(q[2]), float(q[3])), int(ratios.size))


# --- the launch t interval -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchVariance:
    """The spread of ln stat(one launch) measured elsewhere (a calibration): s^2 with its df."""

    var: float
    df: int


@dataclass(frozen=True)
class LaunchCI:
    ci90: tuple[float, float]
    ci95: tuple[float, float]
    df: int  # degrees of freedom of the pooled launch variance
    se: float  # of ln(ratio)


def launch_t_ci(
    cand_logs: Sequence[float],
    base_logs: Sequence[float],
    ratio: float,
    prior: LaunchVariance | None = None,
) -> LaunchCI | None:
    """The launch t interval of the module docstring around ``ratio``: ``cand_logs`` / ``base_logs``
    are ln stat(launch) per launch of each side. None when no degree of freedom is left (one launch
    per side and no calibration) or the ratio is not positive."""
    sides = [np.asarray(z, dtype=float) for z in (cand_logs, base_logs)]
    if ratio <= 0 or any(z.size == 0 or not np.all(np.isfinite(z)) for z in sides):
        return None
    ss = sum(float(np.sum((z - z.mean()) ** 2)) for z in sides)
    df = sum(z.size - 1 for z in sides)
    if prior is not None:
        ss, df = ss + prior.df * prior.var, df + prior.df
    if df < 1:
        return None
    se = math.sqrt(ss / df * (1 / sides[0].size + 1 / sides[1].size))
    centre = math.log(ratio)

    def interval(level: float) -> tuple[float, float]:
        half = t_quantile(0.5 + level / 2, df) * se
        return math.exp(centre - half), math.exp(centre + half)

    return LaunchCI(interval(0.90), interval(0.95), df, se)


# --- how much of the variance is between launches ------------------------------------------------------


@dataclass(frozen=True)
class LaunchShare:
    launches: int
    units: int
    between_var: float
    within_var: float
    share: float  # between / (between + within), 0..1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def between_launch_share(groups: Sequence[Sequence[float]]) -> LaunchShare | None:
    """The ANOVA estimate of the between-launch share (module docstring); None with fewer than
    two launches, no within-launch replicate, or no variance at all."""
    clean = [[float(v) for v in g if v is not None and math.isfinite(v)] for g in groups]
    clean = [g for g in clean if g]
    r = len(clean)
    total = sum(len(g) for g in clean)
    if r < 2 or total <= r:
        return None
    grand = math.fsum(v for g in clean for v in g) / total
    means = [math.fsum(g) / len(g) for g in clean]
    msb = math.fsum(len(g) * (m - grand) ** 2 for g, m in zip(clean, means, strict=True)) / (r - 1)
    msw = math.fsum((v - m) ** 2 for g, m in zip(clean, means, strict=True) for v in g) / (total - r)
    n0 = (total - sum(len(g) ** 2 for g in clean) / total) / (r - 1)
    between = max(0.0, (msb - msw) / n0)
    if between + msw <= 0:
        return None
    return LaunchShare(launches=r, units=total, between_var=between, within_var=msw, share=between / (between + msw))
