"""Group-sequential boundaries and the sequential paired equivalence test (docs/statistics.md §1a).

The paired gate of ``byog.analysis.stats`` looked at once, after every item. A group-sequential design
looks at planned fractions t_1 < ... < t_K = 1 of the items (plan setting ``looks``) and may stop at
any of them; its boundaries are set so that the overall error over all K looks stays at alpha.

**Boundaries** (Lan-DeMets alpha spending). A spending function alpha*(t) says how much of alpha may
be spent by information fraction t:

- O'Brien-Fleming type: alpha*(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))   (spends almost nothing early)
- Pocock type:          alpha*(t) = alpha ln(1 + (e - 1) t)

The look-k boundary c_k solves P(no crossing at looks 1..k-1, crossing at look k) = alpha*(t_k) -
alpha*(t_{k-1}) under the null, where the z statistics of the looks are jointly normal with
corr(Z_i, Z_j) = sqrt(t_i / t_j) (independent increments). The probability is computed by numerical
integration of the score process S_k = Z_k sqrt(t_k) (Armitage, McPherson and Rowe's recursion:
the density of S on the continuation region, carried look to look by a normal convolution on a
Simpson grid), and c_k by a root finder. ``classic_constant`` solves the original Pocock (c_k = C)
and O'Brien-Fleming (c_k = C sqrt(t_K / t_k)) designs the same way.

**The sequential gate** at look k, on the first n_k items (in the plan's item order), with d, SE_d
as in ``byog.analysis.stats`` (SE_d floored the same way):

- **equivalent** when both one-sided tests of the TOST cross their look-k boundary e_k (one-sided,
  alpha each): (d + margin) / SE_d >= e_k and (margin - d) / SE_d >= e_k;
- **different** when |d| / SE_d >= c_k (two-sided alpha) and |d| > margin;
- otherwise continue; at the last look, **inconclusive**.

z boundaries become t boundaries at n_k - 1 degrees of freedom by their tail probability (the
"significance level" conversion), so a one-look design is the fixed gate exactly.

**Binary items** (``stats.method_for`` gives "tango-score": one pass, scores 0 or 100): every look
uses the fixed gate's statistic, Tango's score statistic, which is on the z scale the boundaries
are computed on, so they apply as they are: equivalent when T(-margin) >= e_k and -T(+margin) >= e_k;
different when |T(0)| >= c_k and |d| > margin (``stats.score_stops``). A one-look design is again
the fixed gate exactly. A look the
plan did not list is never taken: the looks are item counts fixed from the plan before any item
is seen (``look_sizes``), and ``sequential_gate`` reads the items at those counts only.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from byog.analysis import stats
from byog.schemas.evals import PairedMethod, SequentialLook, SequentialRecord
from byog.schemas.plan import EvalSpec

Spending = Literal["obf", "pocock"]
Sides = Literal[1, 2]
SequentialDecision = Literal["equivalent", "different", "continue", "inconclusive"]

GRID_POINTS = 1201  # Simpson nodes across one look's continuation region (odd)
TAIL_SD = 9.0  # a one-sided region is cut this many SDs below 0 (mass beyond: < 1e-18)
BOUND_MAX = 30.0  # the root finder's upper end for a boundary (a look that spends ~nothing)

Grid = tuple[NDArray[np.float64], NDArray[np.float64]]  # nodes of S, density times Simpson weight


def spent(spending: Spending, alpha: float, t: float) -> float:
    """alpha*(t): the error a design may have spent by information fraction t (0 <= t <= 1)."""
    from scipy.special import ndtr, ndtri

    if t <= 0:
        return 0.0
    if spending == "obf":
        return float(2.0 - 2.0 * ndtr(ndtri(1.0 - alpha / 2.0) / math.sqrt(t)))
    return alpha * math.log(1.0 + (math.e - 1.0) * min(t, 1.0))


def _start() -> Grid:
    """S_0 = 0: a point mass."""
    return np.zeros(1), np.ones(1)


def _exit(prev: Grid, dt: float, low: float, high: float) -> float:
    """P(S_k outside (low, high), no earlier exit), S_k = S_{k-1} + N(0, dt)."""
    from scipy.special import ndtr

    nodes, mass = prev
    sd = math.sqrt(dt)
    return float(np.sum(mass * (ndtr((low - nodes) / sd) + ndtr((nodes - high) / sd))))


def _carry(prev: Grid, dt: float, low: float, high: float) -> Grid:
    """The density of S_k on (low, high), no exit so far, as Simpson nodes and weighted mass."""
    nodes, mass = prev
    sd = math.sqrt(dt)
    grid = np.linspace(low, high, GRID_POINTS)
    step = grid[1] - grid[0]
    weights = np.full(GRID_POINTS, 2.0)
    weights[1::2] = 4.0
    weights[0] = weights[-1] = 1.0
    weights *= step / 3.0
    z = (grid[:, None] - nodes[None, :]) / sd
    density = (np.exp(-0.5 * z * z) / (sd * math.sqrt(2.0 * math.pi))) @ mass
    return grid, density * weights


def _region(bound: float, t: float, sides: Sides) -> tuple[float, float]:
    """The continuation region of S at fraction t for a z boundary."""
    high = bound * math.sqrt(t)
    return (-high if sides == 2 else -TAIL_SD * math.sqrt(t) - abs(high)), high


def exit_probabilities(fractions: Sequence[float], bounds: Sequence[float], sides: Sides) -> list[float]:
    """P(first crossing at look k) under the null, for z boundaries ``bounds`` at ``fractions``."""
    probs: list[float] = []
    state, before = _start(), 0.0
    for t, bound in zip(fractions, bounds, strict=True):
        low, high = _region(bound, t, sides)
        probs.append(_exit(state, t - before, low, high))
        state, before = _carry(state, t - before, low, high), t
    return probs


def _check_fractions(fractions: Sequence[float]) -> None:
    if not fractions or any(b <= a for a, b in zip(fractions, fractions[1:], strict=False)):
        raise ValueError(f"look fractions must increase: {list(fractions)}")
    if fractions[0] <= 0 or abs(fractions[-1] - 1.0) > 1e-12:
        raise ValueError(f"look fractions must lie in (0, 1] and end at 1: {list(fractions)}")


def _solve_bound(state: Grid, dt: float, t: float, sides: Sides, target: float) -> float:
    """The z boundary at fraction t whose exit probability, given ``state``, is ``target``."""
    from scipy.optimize import brentq

    return float(brentq(lambda c: _exit(state, dt, *_region(c, t, sides)) - target, 0.0, BOUND_MAX, xtol=1e-10))


def spending_bounds(fractions: Sequence[float], alpha: float, spending: Spending, sides: Sides) -> list[float]:
    """The z boundary of each look: look k spends alpha*(t_k) - alpha*(t_{k-1}) (Lan-DeMets).

    A two-sided test of level alpha spends alpha / 2 on each side, each by the spending function
    of level alpha / 2 (the convention of Reboussin et al.'s programs and of gsDesign).
    """
    from scipy.special import ndtri

    _check_fractions(fractions)
    bounds: list[float] = []
    state, before = _start(), 0.0
    for t in fractions:
        target = sides * (spent(spending, alpha / sides, t) - spent(spending, alpha / sides, before))
        dt = t - before
        if target <= 1e-15:
            bound = BOUND_MAX
        elif len(bounds) == 0:
            bound = float(ndtri(1.0 - target / sides))
        else:
            bound = _solve_bound(state, dt, t, sides, target)
        bounds.append(bound)
        state, before = _carry(state, dt, *_region(bound, t, sides)), t
    return bounds


@functools.lru_cache(maxsize=64)
def _bounds(fractions: tuple[float, ...], alpha: float, spending: Spending, sides: Sides) -> tuple[float, ...]:
    """``spending_bounds``, once per design: the gate, verify and ``byog plan`` ask for the same ones."""
    return tuple(spending_bounds(fractions, alpha, spending, sides))


def classic_constant(fractions: Sequence[float], alpha: float, shape: Spending, sides: Sides = 2) -> float:
    """C of the original designs: Pocock c_k = C, O'Brien-Fleming c_k = C sqrt(t_K / t_k)."""
    from scipy.optimize import brentq

    _check_fractions(fractions)

    def total(c: float) -> float:
        return sum(exit_probabilities(fractions, classic_bounds(fractions, c, shape), sides)) - alpha

    return float(brentq(total, 0.5, 10.0, xtol=1e-10))


def classic_bounds(fractions: Sequence[float], constant: float, shape: Spending) -> list[float]:
    if shape == "pocock":
        return [constant] * len(fractions)
    return [constant * math.sqrt(fractions[-1] / t) for t in fractions]


# --- the sequential paired gate ------------------------------------------------------------------


@dataclass(frozen=True)
class Look:
    """One planned look: what it saw, its statistics and boundaries, and what it decided."""

    items: int
    d: float
    se_d: float
    z_lower: float  # (d + margin) / SE_d: the TOST's lower one-sided statistic
    z_upper: float  # (margin - d) / SE_d
    z_zero: float  # d / SE_d: the difference test's statistic
    equivalence_bound: float  # t boundary the two TOST statistics must both reach
    difference_bound: float  # t boundary |z_zero| must reach (and |d| > margin)
    decision: SequentialDecision


def look_sizes(n: int, fractions: Sequence[float]) -> list[int]:
    """The item count of each look, fixed before any item is seen: ceil(t_k n), distinct, ending at n."""
    _check_fractions(fractions)
    sizes = sorted({min(n, max(2, math.ceil(t * n - 1e-9))) for t in fractions})
    return sizes if sizes[-1] == n else [*sizes, n]


def _as_t(z_bound: float, df: int) -> float:
    """A z boundary as the t boundary of the same tail probability at ``df`` degrees of freedom."""
    from scipy.special import ndtr

    return -stats.t_quantile(float(ndtr(-z_bound)), df)  # the lower tail: finite up to BOUND_MAX


@dataclass(frozen=True)
class SequentialDesign:
    """The plan's design for one eval: look fractions, spending function, alpha of each test."""

    fractions: tuple[float, ...]
    spending: Spending = "obf"
    alpha: float = stats.ALPHA

    @classmethod
    def of(cls, spec: EvalSpec) -> SequentialDesign:
        """The design an eval of the plan sets (its ``looks`` and ``spending``; ``looks`` must be set)."""
        assert spec.looks is not None, "an eval without looks has no sequential design"
        return cls(fractions=tuple(spec.looks), spending=spec.spending)


def stops(
    d: NDArray[np.float64], se: NDArray[np.float64], margin: float, e_t: float, c_t: float
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """The look rule, on arrays of (d, SE_d): (stops for equivalence, stops for difference)."""
    equivalent = ((d + margin) / se >= e_t) & ((margin - d) / se >= e_t)
    different = ~equivalent & (np.abs(d) / se >= c_t) & (np.abs(d) > margin)
    return equivalent, different


def floored_se(sd: NDArray[np.float64], n: int, resolution: float) -> NDArray[np.float64]:
    """SE_d = sd / sqrt(n), floored at one discordant item's worth as the fixed gate floors it."""
    se = sd / math.sqrt(n)
    return np.where(se == 0, resolution / n, se)


def _look(
    diffs: Sequence[float],
    margin: float,
    resolution: float,
    bounds: tuple[float, float],
    last: bool,
    method: PairedMethod,
) -> Look:
    n = len(diffs)
    d = stats.mean(diffs)
    se = float(floored_se(np.array([stats.sample_sd(diffs)]), n, resolution)[0])
    e_b, c_b = bounds
    if method == "tango-score":
        plus, minus = sum(1 for x in diffs if x > 0), sum(1 for x in diffs if x < 0)
        low, high, zero = (float(z) for z in stats.score_statistics(plus, minus, n, margin))
        equivalent, different = stats.score_stops(plus, minus, n, margin, e_b, c_b)
    else:
        low, high, zero = (d + margin) / se, (margin - d) / se, d / se
        equivalent, different = stops(np.array([d]), np.array([se]), margin, e_b, c_b)
    decision: SequentialDecision = "inconclusive" if last else "continue"
    if bool(np.all(equivalent)):
        decision = "equivalent"
    elif bool(np.all(different)):
        decision = "different"
    return Look(n, d, se, low, high, zero, e_b, c_b, decision)


def look_bounds(
    sizes: Sequence[int], design: SequentialDesign, method: PairedMethod = "paired-t"
) -> list[tuple[float, float]]:
    """Per look of ``sizes`` items (the last is every item): (TOST boundary, difference boundary),
    as t boundaries for the paired t statistic, as the z boundaries themselves for Tango's."""
    fractions = tuple(s / sizes[-1] for s in sizes)
    e_bounds = _bounds(fractions, design.alpha, design.spending, 1)
    c_bounds = _bounds(fractions, design.alpha, design.spending, 2)
    if method == "tango-score":
        return list(zip(e_bounds, c_bounds, strict=True))
    return [(_as_t(e, s - 1), _as_t(c, s - 1)) for s, e, c in zip(sizes, e_bounds, c_bounds, strict=True)]


def sequential_gate(
    diffs: Sequence[float],
    margin: float,
    design: SequentialDesign,
    resolution: float = 100.0,
    planned: int | None = None,
    method: PairedMethod = "paired-t",
) -> list[Look]:
    """Every look the design plans on these paired differences (item order), up to the one that stops.

    The looks are fractions of ``planned`` items (None: of every item given). The last entry's decision
    is the verdict ("equivalent", "different" or "inconclusive"), or "continue" where the differences
    end before the next look: items past a look that did not stop are missing. ``method``: the fixed
    gate's (``stats.method_for`` on the paired scores), so every look uses the statistic it judges by.
    """
    if margin <= 0:
        raise ValueError("the equivalence margin must be positive")
    if len(diffs) < 2:
        raise ValueError("a sequential design needs at least 2 items")
    sizes = look_sizes(len(diffs) if planned is None else max(planned, 2), design.fractions)
    looks: list[Look] = []
    for k, (size, bounds) in enumerate(zip(sizes, look_bounds(sizes, design, method), strict=True)):
        if size > len(diffs):
            break
        look = _look(diffs[:size], margin, resolution, bounds, k == len(sizes) - 1, method)
        looks.append(look)
        if look.decision in ("equivalent", "different"):
            break
    return looks


def sequential_record(
    diffs: Sequence[float],
    margin: float,
    design: SequentialDesign,
    resolution: float = 100.0,
    planned: int | None = None,
    method: PairedMethod = "paired-t",
) -> SequentialRecord:
    """The summary's record of the gate on these paired differences (plan item order). Where the
    items end before a look the design needs, the last look says "continue" (or none was taken) and
    the decision is "inconclusive": ``missing_items`` tells it apart."""
    looks = sequential_gate(diffs, margin, design, resolution, planned, method)
    last = looks[-1].decision if looks else "continue"
    return SequentialRecord(
        fractions=list(design.fractions),
        spending=design.spending,
        alpha=design.alpha,
        method=method,
        looks=[SequentialLook(**look.__dict__) for look in looks],
        decision="inconclusive" if last == "continue" else last,
        items_used=looks[-1].items if looks else 0,
        items_planned=len(diffs) if planned is None else planned,
    )


def item_order(key: tuple[str, str]) -> tuple[tuple[int, int | str], ...]:
    """The order the looks read items in, fixed before any is scored: item ids in natural order
    ("test:2" before "test:10", as the dataset lists them), then the item's sha256."""
    item_id, sha = key
    parts = tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", item_id) if p)
    return (*parts, (1, sha))


def stopping_look(record: SequentialRecord) -> int | None:
    """The look (from 1) where the gate stopped; None where none did. A server stops at the first look
    where every pair it is in has stopped (``byog.evals.runner.looks_for``): the largest of these."""
    return len(record.looks) if record.looks and record.decision != "inconclusive" else None


def missing_items(record: SequentialRecord) -> bool:
    """The paired items end before a look the design needed: no look stopped, the last was not taken."""
    return not record.looks or record.looks[-1].decision == "continue"


# --- where the gate is expected to stop (byog plan's estimate) -----------------------------------


def stop_probabilities(
    n: int, design: SequentialDesign, margin: float, mean: float, sd: float
) -> list[tuple[int, float]]:
    """(items, P(the gate stops at that look)) for each planned look of an eval of ``n`` items whose
    paired differences d_i have this mean and sd (points); the last look takes what is left.

    The run's own look sizes and t boundaries (``look_sizes``, ``look_bounds``) with SE_d taken as
    sd / sqrt(n_k) (the normal approximation: SE_d is estimated in the run), so the score process is
    S(t) = sum of d_i / (sd sqrt(N)), a Brownian motion of drift mean sqrt(N) / sd. At look k, with
    M = margin sqrt(N) / sd, the gate stops for equivalence where |S| <= t M - e_k sqrt(t) and for a
    difference where |S| >= max(c_k sqrt(t), t M); the density on what remains is carried look to
    look by the same recursion as the boundaries (``_carry``, ``_exit``), on the driftless W = S - drift t.
    """
    sizes = look_sizes(max(n, 2), design.fractions)
    if sd <= 0:  # no item ever differs: nothing to carry; counted as every item (an upper bound)
        return [(s, 1.0 if s == sizes[-1] else 0.0) for s in sizes]
    scale = math.sqrt(sizes[-1]) / sd
    drift, big_m = mean * scale, margin * scale
    state, before, alive = _start(), 0.0, 1.0
    out: list[tuple[int, float]] = []
    for k, (size, (e_t, c_t)) in enumerate(zip(sizes, look_bounds(sizes, design), strict=True)):
        if k == len(sizes) - 1:
            out.append((size, alive))
            break
        t = size / sizes[-1]
        high, low = max(c_t * math.sqrt(t), t * big_m), t * big_m - e_t * math.sqrt(t)
        regions = [(-high, high)] if low <= 0 else [(-high, -low), (low, high)]
        shifted = [(a - drift * t, b - drift * t) for a, b in regions]
        stays = sum(alive - _exit(state, t - before, a, b) for a, b in shifted)
        out.append((size, alive - stays))
        grids = [_carry(state, t - before, a, b) for a, b in shifted]
        state = (np.concatenate([g[0] for g in grids]), np.concatenate([g[1] for g in grids]))
        before, alive = t, stays
    return out


def expected_items(n: int, design: SequentialDesign, margin: float, mean: float, sd: float) -> float:
    """E[items at the stopping look] (the average sample number) under ``stop_probabilities``' model."""
    return sum(size * p for size, p in stop_probabilities(n, design, margin, mean, sd))
