"""Goodput under a latency SLO, and the rate search that finds the highest rate keeping it.

Why: a decode path that is faster on average can still miss a latency target more often; the
question a deployment asks is "how much traffic can I take while X % of requests stay inside my
TTFT and TPOT limits". The formulas here are pure functions of per-request numbers (seconds,
token counts), so ``verify`` recomputes them from the raw rows.

Definitions (docs/metrics.md maps them to vLLM's ``--goodput``, AIPerf's goodput, guidellm and
SGLang):

- a request **meets the SLO** when it succeeded and every stated limit holds:
  ``ttft <= ttft_max`` and ``tpot <= tpot_max`` and ``e2e <= e2e_max`` (unstated limits are not
  checked). A request with fewer than two output tokens has no TPOT; it meets a TPOT limit, as
  in vLLM's ``bench serve`` (which counts its TPOT as 0);
- ``slo_share = good / measured`` (failed requests count as measured and not good);
- ``goodput_req_s = good / span`` and ``goodput_tok_s = sum n_out(good) / span`` over the same
  span as byog's ``output_tok_s`` (first send to last token of the point).

The rate search (``next_rate``/``search_result``) brackets then bisects over measured points; its
rule is stated once, in ``next_rate``'s docstring, and the result is a pure function of the
measured (rate, share) pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from byog.analysis import metrics
from byog.schemas.bench import GoodputSummary, RequestRow
from byog.schemas.plan import RateSearch, SloSpec


@dataclass(frozen=True)
class SloLimits:
    """Per-request limits in seconds; ``None`` = not part of the SLO."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    @property
    def empty(self) -> bool:
        return self.ttft_s is None and self.tpot_s is None and self.e2e_s is None


def meets_slo(ok: bool, ttft_s: float | None, tpot_s: float | None, e2e_s: float | None, slo: SloLimits) -> bool:
    """One request: ``ok and ttft <= ttft_max and tpot <= tpot_max and e2e <= e2e_max`` (unset limits skipped).

    ``tpot_s = None`` (fewer than two output tokens) meets any TPOT limit.
    """
    if not ok:
        return False
    if slo.ttft_s is not None and (ttft_s is None or ttft_s > slo.ttft_s):
        return False
    if slo.tpot_s is not None and tpot_s is not None and tpot_s > slo.tpot_s:
        return False
    return not (slo.e2e_s is not None and (e2e_s is None or e2e_s > slo.e2e_s))


@dataclass(frozen=True)
class Goodput:
    measured: int  # requests counted (failed ones included)
    good: int  # requests that met every limit
    slo_share: float | None  # good / measured
    goodput_req_s: float | None  # good / span
    goodput_tok_s: float | None  # output tokens of good requests / span


def goodput(met: Sequence[bool], n_out: Sequence[int], span_s: float | None) -> Goodput:
    """``slo_share = good / n``, ``goodput_req_s = good / span``, ``goodput_tok_s = sum(n_out of good) / span``."""
    if len(met) != len(n_out):
        raise ValueError("met and n_out must have one entry per request")
    good = sum(1 for m in met if m)
    tokens = sum(n for m, n in zip(met, n_out, strict=True) if m)
    rate_ok = span_s is not None and span_s > 0
    return Goodput(
        measured=len(met),
        good=good,
        slo_share=good / len(met) if met else None,
        goodput_req_s=good / span_s if rate_ok and span_s else None,
        goodput_tok_s=tokens / span_s if rate_ok and span_s else None,
    )


# --- the rate search ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RateSearchRule:
    """How the search picks rates: start, growth while bracketing, relative tolerance, probe budget."""

    target_share: float = 0.9  # the share of requests that must meet the SLO
    start_rate: float = 1.0  # requests/s of the first probe
    growth: float = 2.0  # bracketing factor (x growth up, / growth down)
    rel_tol: float = 0.1  # stop when (fail - pass) / pass <= rel_tol
    max_probes: int = 8  # never measure more points than this
    min_rate: float = 1e-3  # below this, give up: no rate meets the target


@dataclass(frozen=True)
class RateSearchResult:
    best_rate: float | None  # the highest rate that met the target below the lowest failing rate
    failing_rate: float | None  # the lowest rate that missed it
    converged: bool  # the bracket is within rel_tol (or a passing rate and no failing one was needed)
    probes: int
    reason: str  # one sentence: why the search stopped / what it found
    non_monotone: list[float]  # passing rates above a failing one (noise): ignored, listed


def _round_rate(rate: float) -> float:
    """Three significant figures: rates become readable point ids, and the search has a resolution."""
    return float(f"{rate:.3g}")


def _bracket(probes: Sequence[tuple[float, float]], target: float) -> tuple[float | None, float | None, list[float]]:
    """(highest passing rate below the lowest failing one, lowest failing rate, passing rates above it)."""
    fails = [r for r, s in probes if s < target]
    hi = min(fails) if fails else None
    passes = [r for r, s in probes if s >= target]
    below = [r for r in passes if hi is None or r < hi]
    above = sorted(r for r in passes if hi is not None and r > hi)
    return (max(below) if below else None), hi, above


def next_rate(probes: Sequence[tuple[float, float]], rule: RateSearchRule) -> float | None:
    """The next rate to measure, or ``None`` to stop. ``probes`` = measured (rate, slo_share) pairs.

    The rule, assuming the share falls as the rate rises:
    1. no probe yet: ``start_rate``;
    2. bracketing: every probe passed -> ``max rate x growth``; every probe failed ->
       ``min rate / growth`` (stop below ``min_rate``: nothing meets the target);
    3. bisection: with ``lo`` the highest passing rate below ``hi``, the lowest failing rate,
       stop when ``(hi - lo) / lo <= rel_tol``; else measure the geometric midpoint
       ``sqrt(lo x hi)`` (rates span decades, so the midpoint is taken in log space);
    4. stop after ``max_probes`` probes, or when the next rate (rounded to 3 significant
       figures) was already measured (the search's resolution).
    A passing rate above a failing one (noise) is ignored: the bracket stays conservative.
    """
    if len(probes) >= rule.max_probes:
        return None
    if not probes:
        return _round_rate(rule.start_rate)
    lo, hi, _ = _bracket(probes, rule.target_share)
    if hi is None:
        candidate = max(r for r, _ in probes) * rule.growth
    elif lo is None:
        candidate = min(r for r, _ in probes) / rule.growth
        if candidate < rule.min_rate:
            return None
    else:
        if (hi - lo) / lo <= rule.rel_tol:
            return None
        candidate = math.sqrt(lo * hi)
    rate = _round_rate(candidate)
    return None if any(math.isclose(rate, r) for r, _ in probes) else rate


def search_result(probes: Sequence[tuple[float, float]], rule: RateSearchRule) -> RateSearchResult:
    """What the measured probes say: the best rate, the bracket, and whether it is within tolerance."""
    lo, hi, above = _bracket(probes, rule.target_share)
    n = len(probes)
    target = f"{rule.target_share:.0%}"
    if not probes:
        return RateSearchResult(None, None, False, 0, "no rate was measured", [])
    if lo is None:
        return RateSearchResult(
            None,
            hi,
            False,
            n,
            f"no measured rate kept {target} of requests inside the SLO (lowest tried: {hi:g} req/s)",
            above,
        )
    if hi is None:
        return RateSearchResult(
            lo,
            None,
            False,
            n,
            f"every measured rate kept {target} inside the SLO; the highest, "
            f"{lo:g} req/s, is a lower bound (probe budget spent)",
            above,
        )
    converged = (hi - lo) / lo <= rule.rel_tol or (next_rate(probes, rule) is None and len(probes) < rule.max_probes)
    how = "within" if converged else "NOT within"
    return RateSearchResult(
        lo,
        hi,
        converged,
        n,
        f"{lo:g} req/s keeps {target} inside the SLO, {hi:g} does not "
        f"({how} the {rule.rel_tol:.0%} tolerance after {n} probes)",
        above,
    )


# --- a point's goodput and a search's probes, from raw rows --------------------------------------


def rule_of(search: RateSearch, slo: SloSpec) -> RateSearchRule:
    """The plan's search settings and SLO target as the search's rule."""
    return RateSearchRule(
        target_share=slo.target_share,
        start_rate=search.start_rate,
        growth=search.growth,
        rel_tol=search.rel_tol,
        max_probes=search.max_probes,
        min_rate=search.min_rate,
    )


def point_goodput(slo: SloSpec, rows: Sequence[RequestRow]) -> GoodputSummary:
    """The SLO share and goodput of a point's measured rows (span as ``output_tok_s``: first send to last token)."""
    limits = SloLimits(ttft_s=slo.ttft_s, tpot_s=slo.tpot_s, e2e_s=slo.e2e_s)
    measured = [r for r in rows if not r.warmup]
    done = [r for r in measured if r.ok]
    span = (max(r.t_last_ns for r in done) - min(r.t_send_ns for r in measured)) / metrics.NS_PER_S if done else None
    met = [meets_slo(r.ok, metrics.ttft_s(r), metrics.tpot_s(r), metrics.e2e_latency_s(r), limits) for r in measured]
    g = goodput(met, [r.n_out for r in measured], span)
    return GoodputSummary(
        ttft_s=slo.ttft_s,
        tpot_s=slo.tpot_s,
        e2e_s=slo.e2e_s,
        target_share=slo.target_share,
        measured=g.measured,
        good=g.good,
        slo_share=g.slo_share,
        goodput_req_s=g.goodput_req_s,
        goodput_tok_s=g.goodput_tok_s,
        meets_target=None if g.slo_share is None else g.slo_share >= slo.target_share,
    )
