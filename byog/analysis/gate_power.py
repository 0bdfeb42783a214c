"""Planned power of the accuracy gate: before a run, how often it fails identical servers, and
how often it flags a server one margin worse (docs/statistics.md states every rule and number).

The gate is ``byog.analysis.stats.paired_comparison``'s TOST: "equivalent" when
|d| + t(0.95, n-1) SE_d < margin, with SE_d floored at ``resolution / n`` when every d_i is equal;
on binary items, when Tango's score statistic passes both one-sided tests (``stats.score_stops``).
A *false fail* is identical servers not declared equivalent; *power* is the chance a candidate
whose true score is one margin lower is not declared equivalent (flagged).

Variance model (per-item Beta-binomial):
- an item's success probability p ~ Beta(a, b), a = mu k, b = (1 - mu) k, with the task's stated
  prior ``(mu, k)`` (the registry's ``sim_profile``) or one fitted to an earlier run (``--from-run``);
- **sampled** decoding: each server scores X ~ Bin(K, p) of its K passes, independently; the
  per-item difference is d_i = 100 (X_c - X_b) / K;
- **greedy** decoding: a server's answer is fixed, so K passes repeat it; a server that is
  numerically different re-draws its answer on a fraction ``redraw`` of items (batch
  composition, kernels). Identical servers then disagree on an item with probability
  redraw x 2 p (1 - p), split evenly between d_i = +100 and -100;
- the shifted candidate has p' = clip(p + delta, 0, 1), delta solved so the mean of p' is
  mu - margin / 100.

Items are independent draws from that model, so d_1..d_n are i.i.d. with a pmf on 2K + 1
values (3 for greedy or K = 1), computed by averaging over ``GRID`` equal-weight nodes of the
Beta (its midpoint quantiles). Then P(equivalent) is:
- **exact** when d_i takes 3 values: a sum over the trinomial counts (a of +s, b of -s) of the
  gate's rule on them: binary items (s = 100, one pass) by Tango's score statistic, as the gate
  judges them (``stats.score_equivalent``); otherwise d = s (a - b) / n, sum d_i^2 = s^2 (a + b),
  SE_d = sqrt((sum d_i^2 - n d^2) / (n - 1) / n), floored as the gate floors it; the counts
  within 12 SD of their means, a few ms at n = 1,319;
- **normal** otherwise: d ~ N(mu_d, sigma^2 / n) and s^2 ~ sigma^2 chi2(nu) / nu with nu matched to
  Var(s^2) = mu_4 / n - sigma^4 (n - 3) / (n (n - 1)) (Satterthwaite), taken independent;
  P = P0 [all d_i equal: floored SE] + (1 - P0) E_s[ Phi((M - tS - mu_d)/tau) - Phi((-M + tS - mu_d)/tau) ]^+
  with S = s / sqrt(n), tau = sigma / sqrt(n), the expectation over ``GRID`` chi-square quantiles.
Both run in milliseconds; ``tests/unit/analysis/test_gate_power.py`` holds them against a
simulation of the gate itself.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from byog.analysis.stats import ALPHA, paired_comparison, score_equivalent, t_quantile, z_quantile
from byog.plans.tasks import TASKS
from byog.plans.tiers import eval_items
from byog.schemas.evals import PairedMethod
from byog.schemas.plan import EvalSpec

SOUND_FALSE_FAIL = 0.05  # the gate is "sound" when identical servers fail it at most this often
GRID = 256  # quantile nodes for p ~ Beta and for the chi-square of s^2
# Greedy: the fraction of items on which a numerically different server re-draws its answer.
# Pessimistic on purpose (twice 5%): two builds of one model disagree on more items than
# run-to-run noise does. An assumption until --from-run measures it (docs/statistics.md).
GREEDY_REDRAW = 0.10

Method = Literal["exact", "normal"]


@dataclass(frozen=True)
class ItemModel:
    """What the prediction assumes about the task: prior accuracy, concentration, greedy re-draw rate."""

    accuracy: float  # mu: mean per-item success probability, 0..1
    concentration: float  # k = a + b of the Beta; low = U-shaped (items always or never solved)
    redraw: float = GREEDY_REDRAW  # greedy only
    source: str = "prior"  # "prior" (the task registry) or "run <path>" (fitted to an earlier run)

    def nodes(self) -> np.ndarray:
        """GRID equal-weight nodes of Beta(mu k, (1 - mu) k): the midpoint quantiles (read-only)."""
        if self.accuracy <= 0.0 or self.accuracy >= 1.0:
            return np.full(GRID, float(self.accuracy))
        return _beta_midpoints(self.accuracy * self.concentration, (1 - self.accuracy) * self.concentration)


@functools.lru_cache(maxsize=256)
def _beta_midpoints(a: float, b: float) -> np.ndarray:
    """The Beta(a, b) quantiles of (i + 1/2) / GRID, once per (a, b): a prediction asks for them
    three times, a search for the cheapest design dozens."""
    from scipy.special import betaincinv  # the Beta quantile (scipy.stats.beta.ppf), without scipy.stats' import

    nodes = np.asarray(betaincinv(a, b, (np.arange(GRID) + 0.5) / GRID), dtype=float)
    nodes.flags.writeable = False
    return nodes


@dataclass(frozen=True)
class PlannedPower:
    n: int
    passes: int
    sampled: bool
    margin: float
    false_fail: float  # P(not equivalent | identical servers)
    power: float  # P(not equivalent | candidate one margin worse)
    sd_item: float  # sd of d_i under identical servers, points
    method: Method
    model: dict[str, Any]

    @property
    def sound(self) -> bool:
        return self.false_fail <= SOUND_FALSE_FAIL

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sound": self.sound}


# --- the per-item difference ---------------------------------------------------------------


def shifted(p: np.ndarray, shift: float) -> np.ndarray:
    """clip(p + delta, 0, 1) with delta solved (bisection) so the mean moves by exactly ``shift``."""
    lo, hi = -1.0, 1.0
    target = float(p.mean()) + shift
    for _ in range(60):  # the clipped mean is monotone in delta
        mid = (lo + hi) / 2
        if float(np.clip(p + mid, 0, 1).mean()) < target:
            lo = mid
        else:
            hi = mid
    return np.clip(p + (lo + hi) / 2, 0, 1)


def _binom_pmf(k: int, p: np.ndarray) -> np.ndarray:
    """Rows: nodes; columns: 0..k successes."""
    from scipy.special import gammaln, xlog1py, xlogy

    x, q = np.arange(k + 1)[None, :], p[:, None]
    pmf: np.ndarray = np.exp(gammaln(k + 1) - gammaln(x + 1) - gammaln(k - x + 1) + xlogy(x, q) + xlog1py(k - x, -q))
    return pmf


def pmf_moments(values: np.ndarray, probs: np.ndarray) -> tuple[float, float]:
    """(mean, sd) of d_i from its pmf (``difference_pmf``)."""
    mean = float(np.dot(values, probs))
    return mean, math.sqrt(max(float(np.dot(values**2, probs)) - mean * mean, 0.0))


def difference_pmf(
    model: ItemModel, passes: int, sampled: bool, shift_points: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """(values in points, probabilities) of d_i = candidate_i - baseline_i.

    ``shift_points`` < 0 lowers the candidate's mean accuracy by that many points.
    """
    p = model.nodes()
    q = shifted(p, shift_points / 100.0) if shift_points else p
    if not sampled:
        # candidate keeps the baseline's draw U_i unless it re-draws: P(base 1, cand 0) etc.
        f = model.redraw
        down = (1 - f) * np.clip(p - q, 0, None) + f * p * (1 - q)
        up = (1 - f) * np.clip(q - p, 0, None) + f * (1 - p) * q
        probs = np.array([down.mean(), 0.0, up.mean()])
        probs[1] = 1.0 - probs[0] - probs[2]
        return np.array([-100.0, 0.0, 100.0]), probs
    k = passes
    base, cand = _binom_pmf(k, p), _binom_pmf(k, q)
    probs = np.zeros(2 * k + 1)
    for i in range(len(p)):  # X_c - X_b: the convolution of cand with reversed base, per node
        probs += np.convolve(cand[i], base[i][::-1])
    probs /= len(p)
    return 100.0 * np.arange(-k, k + 1) / k, probs


# --- P(equivalent) ----------------------------------------------------------------------------


def _t95(n: int) -> float:
    """t(0.95, n - 1): the gate's TOST quantile."""
    return t_quantile(1 - ALPHA, n - 1)


def _count_range(n: int, p: float) -> np.ndarray:
    """0..n, cut to mean +/- 12 sd of Bin(n, p) (the terms outside hold < 1e-30 of the mass)."""
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    return np.arange(max(0, math.floor(mean - 12 * sd - 1)), min(n, math.ceil(mean + 12 * sd + 1)) + 1)


def prob_equivalent_exact(
    step: float,
    p_down: float,
    p_up: float,
    n: int,
    margin: float,
    resolution: float,
    method: PairedMethod | None = None,
) -> float:
    """P(TOST equivalent) when d_i is -step, 0 or +step: the sum over the trinomial counts.

    ``method``: the gate's rule to sum (None: the one the gate uses on such items, Tango's score
    statistic for binary items; "paired-t" shows what the paired t gate did)."""
    from scipy.special import gammaln, xlogy

    if n < 2:
        return 0.0
    p_zero = max(0.0, 1.0 - p_down - p_up)
    up, down = _count_range(n, p_up), _count_range(n, p_down)  # items at +step, at -step
    ia, ib = np.nonzero(up[:, None] + down[None, :] <= n)  # the (a, b) pairs, row by row
    aa, bb = up[ia].astype(float), down[ib].astype(float)
    # zero counts: n - a - b, indexed by ia + ib (both ranges are consecutive), >= 0 where gathered
    zeros = np.maximum(n - up[0] - down[0] - np.arange(len(up) + len(down) - 1), 0).astype(float)
    iz = ia + ib
    # each term once per distinct count, then gathered: the same values, summed in the same order, as
    # evaluating them on every (a, b) pair, at a fraction of the cost (a verify's observed design runs this)
    with np.errstate(divide="ignore"):  # xlogy(0, 0) = 0: a count of 0 at probability 0 is certain
        a_terms = (gammaln(up + 1.0), xlogy(up.astype(float), p_up))
        b_terms = (gammaln(down + 1.0), xlogy(down.astype(float), p_down))
        z_terms = (gammaln(zeros + 1), xlogy(zeros, p_zero))
    logs = (
        gammaln(n + 1)
        - a_terms[0][ia]
        - b_terms[0][ib]
        - z_terms[0][iz]
        + a_terms[1][ia]
        + b_terms[1][ib]
        + z_terms[1][iz]
    )
    prob = np.exp(logs)
    binary = step == 100.0 and resolution == 100.0
    if method == "tango-score" or (method is None and binary):  # binary items: Tango's score statistic
        eq = score_equivalent(aa, bb, n, margin, z_quantile(1 - ALPHA))
        return float(np.clip(prob[eq].sum(), 0.0, 1.0))
    d = step * (aa - bb) / n
    var = np.clip((step * step * (aa + bb) - n * d * d) / (n - 1), 0, None)
    se = np.sqrt(var / n)
    constant = (aa + bb == 0) | (aa == n) | (bb == n)
    se = np.where(constant, resolution / n, se)
    t = _t95(n)
    eq = (np.abs(d) + t * se) < margin
    return float(np.clip(prob[eq].sum(), 0.0, 1.0))


def prob_equivalent_normal(values: np.ndarray, probs: np.ndarray, n: int, margin: float, resolution: float) -> float:
    """P(TOST equivalent) with d normal and s^2 a matched scaled chi-square (module docstring)."""
    from scipy.special import gammaincinv, ndtr

    if n < 2:
        return 0.0
    mu = float(np.dot(values, probs))
    var = float(np.dot((values - mu) ** 2, probs))
    t = _t95(n)
    p_const = float(np.sum(probs**n))  # every d_i equal: SE floored, d = that value
    const = float(np.sum((probs**n)[np.abs(values) + t * resolution / n < margin]))
    if var <= 0:
        return const
    mu4 = float(np.dot((values - mu) ** 4, probs))
    var_s2 = mu4 / n - var * var * (n - 3) / (n * (n - 1))
    nu = 2 * var * var / var_s2 if var_s2 > 0 else 1e6
    u = (np.arange(GRID) + 0.5) / GRID
    se = np.sqrt(var * (2.0 * gammaincinv(nu / 2.0, u)) / nu / n)
    tau = math.sqrt(var / n)
    half = margin - t * se
    inner = np.where(half > 0, ndtr((half - mu) / tau) - ndtr((-half - mu) / tau), 0.0)
    return const + (1 - p_const) * float(inner.mean())


@functools.lru_cache(maxsize=1024)
def prob_equivalent(
    model: ItemModel, n: int, passes: int, sampled: bool, margin: float, shift_points: float = 0.0
) -> tuple[float, Method]:
    """P(equivalent) of the design, and how it was computed. Once per design and process: a verify
    recomputes an older bundle's evals up to three times (``byog.bundles.checks.recompute``), each
    judging its observed design by the same search of up to 20,000 items."""
    values, probs = difference_pmf(model, passes, sampled, shift_points)
    resolution = 100.0 / passes
    if len(values) == 3:
        return prob_equivalent_exact(float(values[2]), float(probs[0]), float(probs[2]), n, margin, resolution), "exact"
    return prob_equivalent_normal(values, probs, n, margin, resolution), "normal"


def planned_power(model: ItemModel, n: int, passes: int, sampled: bool, margin: float) -> PlannedPower:
    """Predicted false-fail rate and power of one eval at n items x K passes and this margin."""
    if n < 1 or passes < 1 or margin <= 0:
        raise ValueError("planned power needs n >= 1, passes >= 1 and a positive margin")
    eq_null, method = prob_equivalent(model, n, passes, sampled, margin)
    eq_shift, _ = prob_equivalent(model, n, passes, sampled, margin, shift_points=-margin)
    values, probs = difference_pmf(model, passes, sampled)
    sd = math.sqrt(float(np.dot(values**2, probs)))
    return PlannedPower(
        n=n,
        passes=passes,
        sampled=sampled,
        margin=margin,
        false_fail=1.0 - eq_null,
        power=1.0 - eq_shift,
        sd_item=sd,
        method=method,
        model=asdict(model),
    )


def prior_model(task: str) -> ItemModel | None:
    """The task registry's stated prior (``sim_profile``); None for a task byog does not know."""
    spec = TASKS.get(task)
    return ItemModel(*spec.sim_profile) if spec else None


def planned_for_spec(spec: EvalSpec, margin: float, model: ItemModel | None = None) -> PlannedPower | None:
    """Planned power of one plan eval: n = its items (``eval_items``), K = its passes, its
    decoding (the task's, with the plan's gen_kwargs over it), the given margin and the model
    (default: the registry's prior). None for an unknown task or an eval with no items."""
    task = TASKS.get(spec.task)
    model = model or prior_model(spec.task)
    n = eval_items(spec)
    if task is None or model is None or n < 1:
        return None
    return planned_power(model, n, spec.passes, task.sampled_with(spec.gen_kwargs), margin)


# --- cheapest sound design ---------------------------------------------------------------------


# --- cheapest sound design ---------------------------------------------------------------------


def cheapest_sound(
    model: ItemModel, max_items: int, max_passes: int, sampled: bool, margin: float, target: float, step: int = 1
) -> tuple[int, int] | None:
    """The (n, K) with n <= max_items, K <= max_passes and false-fail <= target that costs the
    fewest generations n x K (ties: more items); None when even (max_items, max_passes) misses.

    n is the least that meets the target, rounded up to a multiple of ``step`` (at most max_items).
    """
    best: tuple[int, int] | None = None
    for k in range(1, max_passes + 1) if sampled else [1]:
        if 1.0 - prob_equivalent(model, max_items, k, sampled, margin)[0] > target:
            continue
        lo, hi = 2, max_items  # false-fail falls with n (near enough monotone): bisect the least n
        while lo < hi:
            mid = (lo + hi) // 2
            if 1.0 - prob_equivalent(model, mid, k, sampled, margin)[0] <= target:
                hi = mid
            else:
                lo = mid + 1
        n = min(max_items, -(-lo // step) * step)
        if best is None or n * k < best[0] * best[1] or (n * k == best[0] * best[1] and n > best[0]):
            best = (n, k)
    return best


# --- fitting the model to an earlier run ----------------------------------------------------------


def fit_beta_binomial(successes: Sequence[float], trials: int) -> tuple[float, float | None]:
    """Method-of-moments (mu, k) of a Beta-binomial from per-item success counts out of ``trials``.

    mu = mean(x) / m;  Var(x / m) = mu (1 - mu) (1 / m + (1 - 1 / m) rho),  rho = 1 / (k + 1).
    k is None when it cannot be identified (m = 1) or the counts show no overdispersion.
    """
    x = np.asarray(successes, dtype=float) / trials
    mu = float(x.mean())
    if trials < 2 or len(x) < 2 or mu <= 0 or mu >= 1:
        return mu, None
    v = float(x.var(ddof=1))
    rho = (v / (mu * (1 - mu)) - 1 / trials) / (1 - 1 / trials)
    if rho <= 0:
        return mu, None
    rho = min(rho, 0.999)
    return mu, 1 / rho - 1


def model_from_items(
    baseline: dict[str, list[float]],
    candidate: dict[str, list[float]] | None,
    sampled: bool,
    prior: ItemModel,
    source: str,
) -> ItemModel:
    """An ItemModel fitted to an earlier run's per-item pass scores (item id -> scores 0..1).

    Sampled: (mu, k) by ``fit_beta_binomial`` on the baseline's counts (k from the prior when
    unidentified). Greedy: mu from the baseline; the re-draw rate from the pair's discordant
    items, (x + 1) / (n + 2) of them (so zero observed never predicts a perfectly deterministic
    server), divided by the 2 E[p (1 - p)] a re-draw turns into a disagreement. A pair that agrees
    on every item at a floor or ceiling (no item solved, or every item solved) says nothing about
    the rate, so the prior's is kept.
    """
    ids = sorted(baseline)
    counts = [sum(baseline[i]) for i in ids]
    trials = min(len(baseline[i]) for i in ids)
    observed_mu, k = fit_beta_binomial(
        [c * trials / len(baseline[i]) for c, i in zip(counts, ids, strict=True)], trials
    )
    mu = min(max(observed_mu, 1e-3), 1 - 1e-3)
    fitted = ItemModel(
        accuracy=mu, concentration=k if (sampled and k) else prior.concentration, redraw=prior.redraw, source=source
    )
    if sampled or candidate is None:
        return fitted
    shared = [i for i in ids if i in candidate]
    disagree = sum(1 for i in shared if round(np.mean(baseline[i])) != round(np.mean(candidate[i])))
    if disagree == 0 and observed_mu in (0.0, 1.0):
        return fitted
    redraw = implied_redraw(disagree, len(shared), fitted)
    return ItemModel(accuracy=mu, concentration=fitted.concentration, redraw=redraw, source=source)


def implied_redraw(discordant: int, n: int, model: ItemModel) -> float:
    """The greedy re-draw rate that ``discordant`` of ``n`` paired items imply under ``model``'s Beta:
    (x + 1) / (n + 2) (so zero observed never predicts a perfectly deterministic server) divided by
    the 2 E[p (1 - p)] a re-draw turns into a disagreement, capped at 1."""
    rate = (discordant + 1) / (n + 2)
    p = model.nodes()
    per_redraw = 2 * float(np.mean(p * (1 - p)))
    return min(1.0, rate / per_redraw) if per_redraw > 0 else 1.0


# --- the design judged at the rate a run observed -------------------------------------------------

SOUND_N_MAX = 20_000  # the largest n searched for the design that the observed rate would need


@dataclass(frozen=True)
class ObservedDesign:
    """A greedy eval's design re-judged at the discordance its own run observed."""

    discordance: float  # discordant items / paired items
    redraw: float  # the re-draw rate that implies (``implied_redraw``)
    planned_redraw: float  # the rate the plan was judged at
    false_fail: float  # P(not equivalent | identical servers) at the observed rate, this n and margin
    power: float  # P(not equivalent | one margin worse) at the observed rate
    sound_n: int | None  # least n (multiple of 10) sound at the observed rate; None: over SOUND_N_MAX

    @property
    def sound(self) -> bool:
        return self.false_fail <= SOUND_FALSE_FAIL

    def label(self) -> str | None:
        """The verdict's label when the observed rate makes the design unsound, else ``None``."""
        if self.sound:
            return None
        return f"screening (observed re-draw {self.redraw:.0%} > planned {self.planned_redraw:.0%})"


def observed_design(
    planned: ItemModel, n: int, margin: float, discordant: int, baseline_accuracy: float
) -> ObservedDesign:
    """The greedy design of ``n`` items x 1 pass at ``margin``, judged at the run's own rate: the
    planned model with the baseline's observed accuracy and the re-draw rate ``discordant`` implies."""
    accuracy = min(max(baseline_accuracy, 1e-3), 1 - 1e-3)
    at_accuracy = ItemModel(accuracy, planned.concentration, planned.redraw, planned.source)
    model = ItemModel(accuracy, planned.concentration, implied_redraw(discordant, n, at_accuracy), "observed")
    here = planned_power(model, n, 1, False, margin)
    best = cheapest_sound(model, SOUND_N_MAX, 1, False, margin, SOUND_FALSE_FAIL, step=10)
    return ObservedDesign(
        discordance=discordant / n,
        redraw=model.redraw,
        planned_redraw=planned.redraw,
        false_fail=here.false_fail,
        power=here.power,
        sound_n=best[0] if best else None,
    )


# --- the simulation that the predictions are held against ------------------------------------------


@dataclass(frozen=True)
class SimulatedRates:
    trials: int
    false_fail: float  # identical servers, verdict != equivalent
    power: float  # candidate one margin worse, verdict != equivalent


def simulate_rates(
    model: ItemModel, n: int, passes: int, sampled: bool, margin: float, trials: int, seed: int
) -> SimulatedRates:
    """The gate itself (``paired_comparison``) on simulated servers drawn from the same model.

    Each trial draws n fresh items p_i ~ Beta, then the baseline, an identical server and a
    server one margin worse (p' as in ``shifted``): sampled, K Binomial passes each; greedy,
    one uniform U_i per item shared by the servers, re-drawn by the other server on a fraction
    ``redraw`` of items. Seeded: the same arguments give the same rates.
    """
    rng = np.random.default_rng(seed)
    a, b = model.accuracy * model.concentration, (1 - model.accuracy) * model.concentration
    resolution = 100.0 / passes
    fails = flagged = 0
    for _ in range(trials):
        p = rng.beta(a, b, size=n)
        worse_p = shifted(p, -margin / 100.0)
        if sampled:
            base = rng.binomial(passes, p) * resolution
            same = rng.binomial(passes, p) * resolution
            worse = rng.binomial(passes, worse_p) * resolution
        else:
            u = rng.random(n)
            other = np.where(rng.random(n) < model.redraw, rng.random(n), u)
            base, same, worse = (u < p) * 100.0, (other < p) * 100.0, (other < worse_p) * 100.0
        fails += paired_comparison(same.tolist(), base.tolist(), margin, resolution).verdict != "equivalent"
        flagged += paired_comparison(worse.tolist(), base.tolist(), margin, resolution).verdict != "equivalent"
    return SimulatedRates(trials=trials, false_fail=fails / trials, power=flagged / trials)
