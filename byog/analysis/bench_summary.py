"""The bench part of summary.json: a pure, deterministic function of the raw point files.

``verify`` recomputes it from a bundle and compares, so nothing here may depend on the clock,
the machine or dict order: the bootstrap is seeded from the plan's first seed and the point id.

With one launch per server a comparison's CI is the bootstrap over waves (requests) below. With
more (plan ``launches: R``, or the baseline of an A/A pair) the values pool every launch, the
CI is the hierarchical bootstrap of ``byog.analysis.perf_equivalence``, each point gets the
between-launch share of its variance, and a baseline with two launches calibrates the A/A margin
that labels every comparison of that baseline (faster / slower / equivalent / within noise).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple, TypedDict

import numpy as np

from byog.analysis import counters, energy, metrics, perf_equivalence
from byog.analysis.calibration import calibration_note, launch_prior, launch_spreads, read_calibration
from byog.analysis.goodput import point_goodput, rule_of, search_result
from byog.analysis.interleave import follows_wake
from byog.analysis.interleave_records import check_interleaving
from byog.analysis.request_columns import RequestColumns, read_request_columns
from byog.analysis.resampled_median import pooled_median_of_rows
from byog.analysis.sessions import session_summary
from byog.analysis.validity import invalid_reasons, load_point_record
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan, search_workloads
from byog.schemas.bench import (
    AAMargin,
    AAPoint,
    BenchPoint,
    BenchSummary,
    LaunchShare,
    Percentiles,
    PointComparison,
    PointMetrics,
    PointRecord,
    PointSummary,
    PowerTrace,
    RateProbe,
    RateSearchSummary,
    RequestRow,
    WakeEffect,
    read_request_rows,
)
from byog.schemas.calibration import Calibration
from byog.schemas.calibration import LaunchSpread as LaunchSpreadRecord
from byog.schemas.plan import Plan

BOOTSTRAP_RESAMPLES = 1000
CI_LEVEL = 0.95
# Headline metrics compared per point: (metric name, how to read it from a point's metrics).
HEADLINE = ("decode_tok_s", "tpot_s.p50", "ttft_s.p50", "tok_s_user.p50")
HIGHER_IS_BETTER = {"decode_tok_s": True, "tpot_s.p50": False, "ttft_s.p50": False, "tok_s_user.p50": True}


# --- units: a wave (batch) or a request (other workloads) ------------------------------------


class Unit:
    """What the statistics of one resampling unit need."""

    __slots__ = ("tpots", "ttfts", "itls", "window", "tokens", "steps", "window_s", "n_out", "seq")

    def __init__(
        self,
        tpots: np.ndarray,
        ttfts: np.ndarray,
        itls: np.ndarray,
        window: tuple[int, int] | None,
        tokens: int,
        steps: float,
        n_out: int,
    ) -> None:
        # Arrays, because the bootstrap pools them a thousand times per comparison.
        self.tpots = tpots
        self.ttfts = ttfts
        self.itls = itls
        self.window = window
        self.tokens = tokens
        self.steps = steps
        self.window_s = (window[1] - window[0]) / metrics.NS_PER_S if window else 0.0
        self.n_out = n_out
        self.seq: int | None = None  # an interleaved pair's wave: its visit in the ABBA sequence

    @property
    def block(self) -> int | None:
        """The ABBA block of an interleaved wave (visits 2k and 2k+1 form block k)."""
        return None if self.seq is None else self.seq // 2

    @classmethod
    def of(cls, reqs: RequestColumns, window: tuple[int, int] | None) -> Unit:
        unit = cls(
            tpots=metrics.tpot_s_columns(reqs),
            ttfts=metrics.ttft_s_columns(reqs),
            itls=metrics.itl_s_columns(reqs),
            window=window,
            tokens=metrics.tokens_in_window_columns(reqs, window) if window else 0,
            steps=metrics.steps_in_window_columns(reqs, window) if window else 0.0,
            n_out=int(reqs.n_out[reqs.ok].sum()),
        )
        if reqs.interleave_seq is not None and len(set(reqs.interleave_seq.tolist())) == 1:
            unit.seq = int(reqs.interleave_seq[0])
        return unit


def wave_units(point: BenchPoint, rows: RequestColumns) -> list[Unit]:
    """The summary's resampling units of a point's rows: one per measured wave (batch), else per request."""
    return _units(point, rows)


def decode_rate(units: Sequence[Unit]) -> float | None:
    """decode tok/s of batch waves: the ratio of sums over the waves with a decode window."""
    return _decode_tok_s(units, "batch")


def _units(point: BenchPoint, rows: RequestColumns) -> list[Unit]:
    """Batch: one unit per measured wave (waves in order); else one per measured request (by request index)."""
    measured = rows.take(~rows.warmup)
    if point.kind == "batch":
        waves = [measured.take(measured.wave == w) for w in sorted(set(measured.wave.tolist()))]
        return [Unit.of(wave, metrics.decode_window_ns_columns(wave)) for wave in waves]
    ordered = measured.take(np.argsort(measured.request_index, kind="stable"))
    return _request_units(ordered)


def _request_units(reqs: RequestColumns) -> list[Unit]:
    """One unit per request, from the per-request formulas computed once over all of them."""
    ok = reqs.ok
    with_tpot = ok & (reqs.n_out >= 2)
    tpot_at = np.cumsum(with_tpot) - 1
    ttft_at = np.cumsum(ok) - 1
    tpots, ttfts = metrics.tpot_s_columns(reqs), metrics.ttft_s_columns(reqs)
    values, k, owner = metrics.itl_parts(reqs)
    itl_counts = np.bincount(owner, weights=k, minlength=len(reqs)).astype(np.int64)
    itl_split = np.split(np.repeat(values, k), np.cumsum(itl_counts)[:-1]) if len(reqs) else []
    empty = np.empty(0)
    units = []
    for i in range(len(reqs)):
        units.append(
            Unit(
                tpots=tpots[tpot_at[i] : tpot_at[i] + 1] if with_tpot[i] else empty,
                ttfts=ttfts[ttft_at[i] : ttft_at[i] + 1] if ok[i] else empty,
                itls=itl_split[i],
                window=None,
                tokens=0,
                steps=0.0,
                n_out=int(reqs.n_out[i]) if ok[i] else 0,
            )
        )
    return units


def _inverse(x: float | None) -> float | None:
    return 1.0 / x if x else None


def _pool(units: Sequence[Unit], attr: str) -> np.ndarray:
    return np.concatenate([getattr(u, attr) for u in units]) if units else np.empty(0)


def _decode_tok_s(units: Sequence[Unit], kind: str) -> float | None:
    if kind != "batch":
        return None
    windows = [u for u in units if u.window_s > 0]
    if not windows:
        return None
    return metrics.decode_tok_s(sum(u.tokens for u in windows), math.fsum(u.window_s for u in windows))


_STATISTICS: dict[str, Callable[[Sequence[Unit], str], float | None]] = {
    "decode_tok_s": _decode_tok_s,
    "tpot_s.p50": lambda units, _kind: metrics.percentile(_pool(units, "tpots"), 50),
    "ttft_s.p50": lambda units, _kind: metrics.percentile(_pool(units, "ttfts"), 50),
    "tok_s_user.p50": lambda units, _kind: _inverse(metrics.percentile(_pool(units, "tpots"), 50)),
}


# --- one point ------------------------------------------------------------------------------


class _AcceptanceLength(TypedDict):
    acceptance_length: float | None  # None: no speculative decoding in the point


class Speculation(_AcceptanceLength, total=False):
    """The speculative-decoding fields of ``PointMetrics``, as far as the counters tell them."""

    acceptance_per_position: list[float] | None
    acceptance_per_position_ci: list[list[float]]
    acceptance_length_ci: list[float] | None
    draft_coverage: float | None
    tokens_per_request_step: float | None


def _speculation(deltas: dict[str, Any]) -> Speculation:
    """AL, per-position acceptance (with CIs), draft coverage and tokens per request-step from counter deltas."""
    drafts, accepted = deltas.get(counters.SPEC_DRAFTS, 0.0), deltas.get(counters.SPEC_ACCEPTED, 0.0)
    per_pos = deltas.get(counters.SPEC_ACCEPTED_PER_POS)
    per_pos = per_pos if isinstance(per_pos, list) else None
    out: Speculation = {"acceptance_length": metrics.acceptance_length(accepted, drafts)}
    if out["acceptance_length"] is None:
        return out
    generated = deltas.get(counters.GENERATION_TOKENS)
    if per_pos is not None:
        out["acceptance_per_position"] = metrics.acceptance_per_position(per_pos, drafts)
        out["acceptance_per_position_ci"] = [list(metrics.wilson_interval(a, drafts) or ()) for a in per_pos]
        ci = metrics.acceptance_length_ci(per_pos, drafts)
        out["acceptance_length_ci"] = list(ci) if ci else None
    if generated is not None:
        out["draft_coverage"] = metrics.draft_coverage(drafts, generated, accepted)
        out["tokens_per_request_step"] = metrics.tokens_per_request_step(generated, accepted)
    return out


def point_metrics(
    point: BenchPoint,
    rows: RequestColumns,
    deltas: dict[str, Any],
    units: list[Unit] | None = None,
    power: PowerTrace | None = None,
) -> PointMetrics:
    """Every metric of one point from its measured (non-warm-up) requests, counter deltas and NVML samples.

    ``deltas``: the counter deltas over the measured waves where the record has them, else over
    the whole point (warm-up included).
    """
    measured = rows.take(~rows.warmup)
    units = _units(point, rows) if units is None else units
    tpots = _pool(units, "tpots")
    spec = _speculation(deltas)
    al = spec["acceptance_length"]
    out = PointMetrics(
        ttft_s=Percentiles(**metrics.latency_stats(_pool(units, "ttfts"))),
        tpot_s=Percentiles(**metrics.latency_stats(tpots)),
        itl_s=Percentiles(**metrics.latency_stats(_pool(units, "itls"))),
        itl_request_mean_s=Percentiles(**metrics.latency_stats(metrics.itl_mean_s_columns(measured))),
        e2e_latency_s=Percentiles(**metrics.latency_stats(metrics.e2e_latency_s_columns(measured))),
        tok_s_user=Percentiles(**metrics.interactivity_stats(tpots)),
        output_tok_s=metrics.output_tok_s_columns(measured),
        decode_tok_s=_decode_tok_s(units, point.kind),
        **spec,
    )
    windows = [u for u in units if u.window_s > 0]
    tokens = sum(u.tokens for u in windows)
    if point.kind == "batch":
        window_s = math.fsum(u.window_s for u in windows)
        batch = point.batch_size or 1
        # Steps counted by the client inside the windows (one chunk per request per engine step),
        # not Δgenerated / Δiterations: the server's counters also count prefill steps and the
        # tail steps after the first requests finished, when fewer than B requests decode.
        decode_steps = math.fsum(u.steps for u in windows)
        step_s = metrics.decode_step_s(window_s, decode_steps)
        out.decode_window_s = window_s or None
        out.tokens_in_window = tokens
        out.decode_steps = decode_steps or None
        out.tokens_per_step = tokens / decode_steps if decode_steps else None
        out.decode_step_s = step_s
        if step_s:
            out.crosscheck_decode_tok_s = metrics.crosscheck_decode_tok_s(1.0 / step_s, al or 1.0, batch)
            out.crosscheck_ratio = out.crosscheck_decode_tok_s / out.decode_tok_s if out.decode_tok_s else None
    elif point.kind in ("concurrency", "agentic") and len(measured) > 1:
        # agentic: requests in flight (sessions pause between turns)
        out.achieved_concurrency = metrics.achieved_concurrency_columns(
            rows, int(measured.t_send_ns.min()), int(measured.t_send_ns.max())
        )
    done = measured.take(measured.ok)
    span = (int(measured.t_send_ns.min()), int(done.last_ns.max())) if len(done) else None
    out.power = energy.point_power(
        power,
        [u.window for u in windows if u.window] if point.kind == "batch" else [],
        tokens,
        span,
        int(done.n_out.sum()),
    )
    return out


def _load_point(run_dir: RunDir, server: str, point_id: str) -> tuple[PointRecord | None, RequestColumns | None]:
    """The point's record and, when it is complete, its rows as columns (None where a file is missing)."""
    record_path = run_dir.bench_point(server, point_id)
    record = load_point_record(record_path) if record_path.is_file() else None
    complete = record is not None and record.status == "complete" and run_dir.bench_point_complete(server, point_id)
    return record, read_request_columns(run_dir.bench_rows(server, point_id)) if complete else None


def _row_list(
    run_dir: RunDir, server: str, record: PointRecord | None, rows: RequestColumns | None
) -> list[RequestRow] | None:
    """The rows as records, for the formulas that read per-request fields the columns do not hold
    (an agentic point's sessions, a point's goodput against its SLO); None for other points."""
    if record is None or rows is None or not (record.point.kind == "agentic" or record.point.slo is not None):
        return None
    return list(read_request_rows(run_dir.bench_rows(server, record.point.point_id)))


def _point_entry(
    server: str,
    point: BenchPoint,
    record: PointRecord | None,
    rows: RequestColumns | None,
    units: list[Unit] | None = None,
    row_list: Sequence[RequestRow] | None = None,
) -> PointSummary:
    entry = PointSummary(
        server=server,
        point_id=point.point_id,
        workload=point.workload,
        kind=point.kind,
        batch_size=point.batch_size,
        concurrency=point.concurrency,
        rate=point.rate,
        speedup=point.speedup,
        search_probe=point.search_probe,
        isl=point.isl,
        osl=point.osl,
        api=point.api,
        prompts=record.prompts_label if record else None,
        valid=False,
        invalid_reasons=["not measured (no point record)"],
        n_requests=0,
    )
    if record is None:
        return entry
    reasons = invalid_reasons(record, row_list if point.kind == "agentic" and row_list is not None else rows)
    entry.valid = not reasons
    entry.invalid_reasons = reasons
    entry.remeasured = len(record.attempts) or None
    entry.stopping = record.stopping
    entry.n_requests = int((~rows.warmup).sum()) if rows is not None else 0
    if rows is not None:
        deltas = record.measured_counter_deltas if record.measured_counter_deltas is not None else record.counter_deltas
        entry.metrics = point_metrics(record.point, rows, deltas, units, record.power)
        if point.kind == "agentic" and row_list is not None:
            hits, queries = (
                record.counter_deltas.get(counters.PREFIX_CACHE_HITS),
                record.counter_deltas.get(counters.PREFIX_CACHE_QUERIES),
            )
            entry.sessions = session_summary(
                row_list, hits if isinstance(hits, float) else None, queries if isinstance(queries, float) else None
            )
        if point.slo is not None and row_list is not None:
            entry.goodput = point_goodput(point.slo, row_list)
    return entry


# --- rate searches ----------------------------------------------------------------------------


def search_probes(run_dir: RunDir, server: str, workload: str, isl: int, osl: int) -> list[RateProbe]:
    """The complete probes a rate search measured (in the run directory), by rising rate."""
    return [probe for probe, _ in _probes(run_dir, server, workload, isl, osl)]


def _probes(run_dir: RunDir, server: str, workload: str, isl: int, osl: int) -> list[tuple[RateProbe, BenchPoint]]:
    found = []
    for point_id in run_dir.bench_point_ids(server):
        record = load_point_record(run_dir.bench_point(server, point_id))
        p = record.point
        if not (p.kind == "rate" and p.search_probe and p.workload == workload and (p.isl, p.osl) == (isl, osl)):
            continue
        _, rows = _load_point(run_dir, server, point_id)
        row_list = _row_list(run_dir, server, record, rows)
        if row_list is None or p.rate is None or p.slo is None:
            continue
        found.append((RateProbe(rate=p.rate, point_id=point_id, slo_share=point_goodput(p.slo, row_list).slo_share), p))
    return sorted(found, key=lambda pair: pair[0].rate)


def _probe_points(run_dir: RunDir, plan: Plan, server: str) -> list[BenchPoint]:
    """The points (as they ran) of every rate search of ``server``, by workload, ISL, OSL, rate."""
    out = []
    for workload in search_workloads(plan):
        if server in plan.servers_for(workload):
            for isl in workload.isl:
                for osl in workload.osl:
                    out += [point for _, point in _probes(run_dir, server, workload.name or workload.kind, isl, osl)]
    return out


def _rate_searches(run_dir: RunDir, plan: Plan) -> list[RateSearchSummary]:
    out = []
    for server in plan.servers:
        for workload in search_workloads(plan):
            if server not in plan.servers_for(workload):
                continue
            assert workload.search is not None and workload.slo is not None
            rule = rule_of(workload.search, workload.slo)
            name = workload.name or workload.kind
            for isl in workload.isl:
                for osl in workload.osl:
                    probes = search_probes(run_dir, server, name, isl, osl)
                    result = search_result([(p.rate, p.slo_share or 0.0) for p in probes], rule)
                    out.append(
                        RateSearchSummary(
                            server=server,
                            workload=name,
                            target_share=rule.target_share,
                            probes=probes,
                            best_rate=result.best_rate,
                            failing_rate=result.failing_rate,
                            converged=result.converged,
                            reason=result.reason,
                            non_monotone=result.non_monotone,
                        )
                    )
    return out


# --- A/B ------------------------------------------------------------------------------------


def _pooled_p50_rows(units: Sequence[Unit], attr: str) -> Callable[[np.ndarray], np.ndarray] | None:
    """P50 of the pooled values of many resamples at once: rows of unit indices -> one P50 per row.

    Only when every unit holds the same number of values (a batch wave of B requests), so the
    resampled pools form a matrix; the order inside a pool does not change its percentile.
    """
    arrays = [getattr(u, attr) for u in units]
    if len({a.size for a in arrays}) != 1 or arrays[0].size == 0 or not all(np.isfinite(a).all() for a in arrays):
        return None
    fast = pooled_median_of_rows(arrays)  # the same numbers without building the pools
    if fast is not None:
        return fast
    matrix = np.stack(arrays)
    return lambda rows: np.percentile(matrix[rows].reshape(len(rows), -1), 50, axis=1)


def _vectorised(metric: str, units: Sequence[Unit]) -> Callable[[np.ndarray], np.ndarray] | None:
    """The statistic over many resamples in one numpy call, where it has such a form."""
    if metric == "tpot_s.p50":
        return _pooled_p50_rows(units, "tpots")
    if metric == "ttft_s.p50":
        return _pooled_p50_rows(units, "ttfts")
    if metric == "tok_s_user.p50":
        p50 = _pooled_p50_rows(units, "tpots")
        return None if p50 is None else (lambda rows: 1.0 / p50(rows))
    return None


def resample_rows(seed: list[int], n_cand: int, n_base: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit indices of every resample, drawn in one fixed order: candidate row r, then baseline row r.

    With as many units on both sides (the usual case) one call draws them all: numpy's Generator
    draws bounded integers one after another from the same stream whatever the call boundaries
    (tests/unit/analysis/test_bench_summary_resample.py holds the two ways equal), and 24,000 small calls
    cost a third of a second per summary.
    """
    rng = np.random.default_rng(seed)
    if n_cand == n_base:
        both = rng.integers(0, n_cand, (resamples, 2 * n_cand))
        return both[:, :n_cand], both[:, n_cand:]
    cand_rows = np.empty((resamples, n_cand), dtype=np.int64)
    base_rows = np.empty((resamples, n_base), dtype=np.int64)
    for r in range(resamples):
        cand_rows[r] = rng.integers(0, n_cand, n_cand)
        base_rows[r] = rng.integers(0, n_base, n_base)
    return cand_rows, base_rows


def abba_paired(cand: Sequence[Unit], base: Sequence[Unit]) -> bool:
    """Both sides' waves come from one interleaved ABBA sequence, one wave of each side per block,
    listed in the same block order: the bootstrap then resamples blocks, both sides together."""
    blocks_c, blocks_b = [u.block for u in cand], [u.block for u in base]
    return None not in blocks_c and blocks_c == blocks_b and len(set(blocks_c)) == len(blocks_c)


def bootstrap_ratios(
    cand: Sequence[Unit],
    base: Sequence[Unit],
    stat: Callable[[Sequence[Unit]], float | None],
    seed: list[int],
    resamples: int = BOOTSTRAP_RESAMPLES,
    metric: str | None = None,
) -> list[float] | None:
    """stat(cand)/stat(base) over bootstrap resamples of each side's units (with replacement).

    None with fewer than two units on a side (there is no noise estimate to give) or when fewer
    than half the resamples give a ratio. The resampled indices are drawn in one fixed order
    (candidate, then baseline, per resample); a ``metric`` with a vectorised form is then
    evaluated on all resamples at once. An interleaved pair (``abba_paired``) draws one row of
    block indices per resample and takes both sides' waves of those blocks: a drift shared by the
    two waves of a block stays inside the ratio's pairing instead of widening its CI.
    """
    if len(cand) < 2 or len(base) < 2:
        return None  # one wave (or request) says nothing about noise
    if abba_paired(cand, base):
        cand_rows = base_rows = np.random.default_rng(seed).integers(0, len(cand), (resamples, len(cand)))
    else:
        cand_rows, base_rows = resample_rows(seed, len(cand), len(base), resamples)
    fast_cand, fast_base = (_vectorised(metric, cand), _vectorised(metric, base)) if metric else (None, None)
    if fast_cand is not None and fast_base is not None:
        sc, sb = fast_cand(cand_rows), fast_base(base_rows)
        keep = np.isfinite(sc) & np.isfinite(sb) & (sb != 0)
        ratios = (sc[keep] / sb[keep]).tolist()
    else:
        ratios = []
        for c_idx, b_idx in zip(cand_rows, base_rows, strict=True):
            sc_one, sb_one = stat([cand[i] for i in c_idx]), stat([base[i] for i in b_idx])
            if sc_one is not None and sb_one:
                ratios.append(sc_one / sb_one)
    return ratios if len(ratios) >= resamples // 2 else None


def interval(ratios: Sequence[float], level: float) -> tuple[float | None, float | None]:
    """The percentile bootstrap interval of these resampled values at ``level``."""
    alpha = (1.0 - level) / 2 * 100
    return metrics.percentile(ratios, alpha), metrics.percentile(ratios, 100 - alpha)


def stat_for(metric: str, kind: str) -> Callable[[Sequence[Unit]], float | None]:
    def stat(units: Sequence[Unit]) -> float | None:
        return _STATISTICS[metric](units, kind)

    return stat


Launches = list[list[Unit]]  # per complete launch of one server at one point, its units


def _flat(launches: Launches) -> list[Unit]:
    return [u for launch in launches for u in launch]


class _CIs(NamedTuple):
    ci95: tuple[float | None, float | None]
    ci90: tuple[float, float] | None
    df: int | None  # the launch t interval's degrees of freedom; None: the wave bootstrap


def _ratio_cis(
    cand: Launches,
    base: Launches,
    point: BenchPoint,
    metric: str,
    seed: list[int],
    prior: perf_equivalence.LaunchVariance | None,
    launch_ci: bool = True,
) -> _CIs:
    """The 95% and 90% CIs of one comparison: the launch t interval when a side has two launches
    or more or a calibration gives the launch variance (``perf_equivalence.launch_t_ci``), else the
    wave bootstrap of the two single launches (same draws as ever). ``launch_ci=False``: the
    hierarchical bootstrap instead, as summaries of schema 6 and older computed it."""
    stat = stat_for(metric, point.kind)
    if len(cand) == 1 and len(base) == 1 and prior is None:
        ratios = bootstrap_ratios(cand[0], base[0], stat, seed, metric=metric)
        if ratios is None:
            return _CIs((None, None), None, None)
        lo90, hi90 = interval(ratios, 0.90)
        return _CIs(interval(ratios, CI_LEVEL), (lo90, hi90) if lo90 is not None and hi90 is not None else None, None)
    if not launch_ci:
        rows = (_vectorised(metric, _flat(cand)), _vectorised(metric, _flat(base)))
        fast = (rows[0], rows[1]) if rows[0] is not None and rows[1] is not None else None
        old = perf_equivalence.hierarchical_ratio_ci(cand, base, stat, seed, BOOTSTRAP_RESAMPLES, stat_rows=fast)
        return _CIs(old.ci95 if old.ci95 else (None, None), old.ci90, None)
    cv, bv = stat(_flat(cand)), stat(_flat(base))
    logs = [
        [math.log(v) for v in (stat(launch) for launch in side) if v is not None and v > 0] for side in (cand, base)
    ]
    ci = perf_equivalence.launch_t_ci(logs[0], logs[1], cv / bv, prior) if cv is not None and bv else None
    if ci is None:
        return _CIs((None, None), None, None)
    return _CIs(ci.ci95, ci.ci90, ci.df)


def _units_label(
    point: BenchPoint, cand: Launches, base: Launches, df: int | None
) -> Literal["waves", "requests", "ABBA blocks", "launches"]:
    if df is not None:
        return "launches"
    if point.kind != "batch":
        return "requests"
    return "ABBA blocks" if len(cand) == 1 and len(base) == 1 and abba_paired(cand[0], base[0]) else "waves"


def _aa_margins(plan: Plan, points: list[BenchPoint], units_of: dict[tuple[str, str], Launches]) -> list[AAMargin]:
    """Per baseline with two launches and per headline metric: the A/A ratios and their margin."""
    out = []
    for baseline in dict.fromkeys(b for _, b in plan.comparisons):
        for metric in HEADLINE:
            rows = []
            for point in points:
                launches = units_of.get((baseline, point.point_id)) or []
                if len(launches) < 2:
                    continue
                stat = stat_for(metric, point.kind)
                a1, a2 = stat(launches[0]), stat(launches[1])
                if a1 and a2 and a1 > 0 and a2 > 0:
                    rows.append(AAPoint(point_id=point.point_id, ratio=a2 / a1))
            margin = perf_equivalence.aa_margin([math.log(r.ratio) for r in rows])
            if margin is not None:
                out.append(AAMargin(baseline=baseline, metric=metric, margin=margin, points=rows))
    return out


def _comparisons(
    plan: Plan,
    points: list[BenchPoint],
    units_of: dict[tuple[str, str], Launches],
    margins: dict[tuple[str, str], float],
    calibration: Calibration | None = None,
    launch_ci: bool = True,
) -> list[PointComparison]:
    out = []
    for point in points:
        for candidate, baseline in plan.comparisons:
            base = units_of.get((baseline, point.point_id))
            cand = units_of.get((candidate, point.point_id))
            if not base or not cand:
                continue
            for metric in HEADLINE:
                stat = stat_for(metric, point.kind)
                cv, bv = stat(_flat(cand)), stat(_flat(base))
                if cv is None or not bv:
                    continue
                seed = [plan.seeds[0], zlib.crc32(f"{point.point_id}/{candidate}/{metric}".encode())]
                prior = None
                if calibration is not None and launch_ci and len(cand) == 1 and len(base) == 1:
                    prior = launch_prior(calibration, (candidate, baseline), point.point_id, metric)
                cis = _ratio_cis(cand, base, point, metric, seed, prior, launch_ci)
                low, high = cis.ci95
                comparison = PointComparison(
                    point_id=point.point_id,
                    candidate=candidate,
                    baseline=baseline,
                    metric=metric,
                    candidate_value=cv,
                    baseline_value=bv,
                    ratio=cv / bv,
                    ci_low=low,
                    ci_high=high,
                    ci_level=CI_LEVEL,
                    units=_units_label(point, cand, base, cis.df),
                    within_noise=None if low is None or high is None else bool(low <= 1.0 <= high),
                    ci_df=cis.df,
                )
                if len(cand) > 1 or len(base) > 1:
                    comparison.launches = [len(cand), len(base)]
                if cis.df is None and launch_ci and len(cand) == 1 and len(base) == 1:
                    comparison.ci_note = perf_equivalence.ONE_LAUNCH_NOTE
                    comparison.label = "screening"
                elif prior is not None and calibration is not None and cis.df is not None:
                    comparison.ci_note = calibration_note(calibration)
                margin = margins.get((baseline, metric))
                if margin is not None and comparison.label is None:
                    comparison.margin = margin
                    if cis.ci90 is not None:
                        comparison.ci90_low, comparison.ci90_high = cis.ci90
                    ci95 = (low, high) if low is not None and high is not None else None
                    comparison.label = perf_equivalence.label(cv / bv, cis.ci90, ci95, margin, HIGHER_IS_BETTER[metric])
                out.append(comparison)
    return out


def _launch_shares(
    plan: Plan, points: list[BenchPoint], units_of: dict[tuple[str, str], Launches]
) -> list[LaunchShare]:
    """Per server, point and headline metric with two launches or more: the ANOVA share of the
    variance of the per-unit statistic (per wave, or per request) that lies between launches."""
    out = []
    for server in plan.servers:
        for point in points:
            launches = units_of.get((server, point.point_id)) or []
            if len(launches) < 2:
                continue
            for metric in HEADLINE:
                stat = stat_for(metric, point.kind)
                groups = [[v for v in (stat([u]) for u in launch) if v is not None] for launch in launches]
                share = perf_equivalence.between_launch_share(groups)
                if share is not None:
                    out.append(
                        LaunchShare(
                            server=server,
                            point_id=point.point_id,
                            metric=metric,
                            launches=share.launches,
                            units=share.units,
                            between_var=share.between_var,
                            within_var=share.within_var,
                            share=share.share,
                        )
                    )
    return out


def summarize_bench(run_dir: RunDir, plan: Plan, launch_ci: bool = True) -> BenchSummary:
    """Points (metrics + validity) of every server and launch, the candidate/baseline comparisons,
    the rate searches, and, with more than one launch, the between-launch shares and A/A margins.

    A rate search's probes are found in the run directory (they were chosen while running) and
    listed after the plan's points, by rising rate.
    """
    points = expand_plan(plan)
    units_of: dict[tuple[str, str], Launches] = {}  # per-request formulas run once per point and launch
    entries, launch_entries = [], []
    for server in plan.servers:
        for launch in range(1, plan.launches_of(server) + 1):
            launch_dir = run_dir.for_launch(launch)
            for point in [p for p in points if server in p.servers] + _probe_points(launch_dir, plan, server):
                if not plan.measured_on(point.workload, server, launch):
                    continue
                record, rows = _load_point(launch_dir, server, point.point_id)
                units = _units(record.point, rows) if record is not None and rows is not None else None
                if units is not None:
                    units_of.setdefault((server, point.point_id), []).append(units)
                entry = _point_entry(server, point, record, rows, units, _row_list(launch_dir, server, record, rows))
                if launch == 1:
                    entries.append(entry)
                else:
                    entry.launch = launch
                    launch_entries.append(entry)
    _invalid_if_a_launch_is(entries, launch_entries)
    _pair_only_where_interleaving_held(run_dir, plan, units_of)
    aa = _aa_margins(plan, points, units_of)
    margins = {(a.baseline, a.metric): a.margin for a in aa}
    calibration = read_calibration(run_dir) if launch_ci else None
    comparisons = _comparisons(plan, points, units_of, margins, calibration, launch_ci)
    _flag_conditions(comparisons, entries)
    return BenchSummary(
        points=entries,
        comparisons=comparisons,
        launch_points=launch_entries,
        launch_shares=_launch_shares(plan, points, units_of),
        aa=aa,
        rate_searches=_rate_searches(run_dir, plan),
        wake_effects=_wake_effects(plan, points, units_of),
    )


def _pair_only_where_interleaving_held(run_dir: RunDir, plan: Plan, units_of: dict[tuple[str, str], Launches]) -> None:
    """A wave keeps its ABBA visit (and so the paired bootstrap and the wake-up check) only where the
    records show the pair took turns (``interleave_records``); elsewhere its label is not evidence."""
    held = check_interleaving(run_dir, plan).held
    for key, launches in units_of.items():
        if key not in held:
            for unit in (u for launch in launches for u in launch):
                unit.seq = None


def launch_units(run_dir: RunDir, plan: Plan) -> tuple[dict[str, BenchPoint], dict[tuple[str, str], Launches]]:
    """The plan's points by id, and per (server, point) the units of each complete launch, in launch order."""
    points = {p.point_id: p for p in expand_plan(plan)}
    out: dict[tuple[str, str], Launches] = {}
    for server in plan.servers:
        for launch in range(1, plan.launches_of(server) + 1):
            for point in points.values():
                if server not in point.servers or not plan.measured_on(point.workload, server, launch):
                    continue
                record, rows = _load_point(run_dir.for_launch(launch), server, point.point_id)
                if record is not None and rows is not None:
                    out.setdefault((server, point.point_id), []).append(_units(record.point, rows))
    return points, out


def calibration_spreads(run_dir: RunDir, plan: Plan) -> list[LaunchSpreadRecord]:
    """An A/A calibration's measurement: per server, point and headline metric, the spread of
    ln stat(launch) over its launches (``byog.analysis.calibration.launch_spreads``)."""
    points, units = launch_units(run_dir, plan)
    return launch_spreads(units, lambda point_id, metric: stat_for(metric, points[point_id].kind), HEADLINE)


def _wake_effects(plan: Plan, points: list[BenchPoint], units_of: dict[tuple[str, str], Launches]) -> list[WakeEffect]:
    """Per interleaved server and batch point: decode tok/s of its woken waves / its continued waves."""
    out = []
    for server in [name for pair in plan.interleaved_pairs for name in pair]:
        for point in points:
            launches = units_of.get((server, point.point_id)) or []
            units = launches[0] if len(launches) == 1 and point.kind == "batch" else []
            if not units or any(u.seq is None for u in units):
                continue
            woken, continued = woken_and_continued(units)
            stat = stat_for("decode_tok_s", point.kind)
            w, c = stat(woken) if woken else None, stat(continued) if continued else None
            effect = WakeEffect(
                server=server,
                point_id=point.point_id,
                woken_waves=len(woken),
                continued_waves=len(continued),
                ratio=w / c if w is not None and c else None,
            )
            seed = [plan.seeds[0], zlib.crc32(f"{point.point_id}/{server}/wake".encode())]
            ratios = bootstrap_ratios(woken, continued, stat, seed)
            if ratios is not None:
                effect.ci_low, effect.ci_high = interval(ratios, CI_LEVEL)
                if effect.ci_low is not None and effect.ci_high is not None:
                    effect.flagged = not effect.ci_low <= 1.0 <= effect.ci_high
            out.append(effect)
    return out


def woken_and_continued(units: Sequence[Unit]) -> tuple[list[Unit], list[Unit]]:
    """An interleaved side's waves split by ``follows_wake``: the ones whose visit started right after
    the server was woken (the first visit included), and the ones that continued a visit of the same side."""
    woken = [u for u in units if u.seq is not None and follows_wake(u.seq)]
    continued = [u for u in units if u.seq is not None and not follows_wake(u.seq)]
    return woken, continued


def woken_wave_ratios(units: Sequence[Unit], kind: str) -> list[float]:
    """Each woken wave's decode tok/s over the median of the side's continued waves, in visit order: the
    spread behind ``WakeEffect.ratio`` (which pools the waves of each kind), one value per wake."""
    woken, continued = woken_and_continued(units)
    stat = stat_for("decode_tok_s", kind)
    steady = [v for v in (stat([u]) for u in continued) if v is not None]
    if not steady:
        return []
    median = float(np.median(steady))
    ordered = sorted(woken, key=lambda u: u.seq or 0)
    return [v / median for v in (stat([u]) for u in ordered) if v is not None and median > 0]


def _flag_conditions(comparisons: list[PointComparison], entries: list[PointSummary]) -> None:
    """An A/B whose two servers ran at different SM clocks or power-cap shares at that point says so
    (``energy.conditions_differ``): the ratio measured the power state as well as the software."""
    power = {(e.server, e.point_id): e.metrics.power if e.metrics else None for e in entries}
    for c in comparisons:
        c.conditions = energy.conditions_differ(
            power.get((c.candidate, c.point_id)), power.get((c.baseline, c.point_id))
        )


def _invalid_if_a_launch_is(pooled: list[PointSummary], launches: list[PointSummary]) -> None:
    """A point's values pool every launch, so a launch flagged invalid flags the pooled point too,
    its reasons prefixed with the launch: an invalid number is never part of a result."""
    for entry in pooled:
        reasons = [
            f"launch {other.launch}: {reason}"
            for other in launches
            if (other.server, other.point_id) == (entry.server, entry.point_id)
            for reason in other.invalid_reasons
        ]
        if reasons:
            entry.valid = False
            entry.invalid_reasons = [*entry.invalid_reasons, *reasons]


# --- one side's value with its CI (reproduction) ----------------------------------------------


def bootstrap_value_ci(
    units: Sequence[Unit],
    stat: Callable[[Sequence[Unit]], float | None],
    seed: list[int],
    resamples: int = BOOTSTRAP_RESAMPLES,
    metric: str | None = None,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of stat(units), resampling the units with replacement:
    ``(None, None)`` with fewer than two units, or when fewer than half the resamples give a value.
    """
    if len(units) < 2:
        return None, None
    rng = np.random.default_rng(seed)
    rows = np.empty((resamples, len(units)), dtype=np.int64)
    for r in range(resamples):
        rows[r] = rng.integers(0, len(units), len(units))
    fast = _vectorised(metric, units) if metric else None
    values: list[float]
    if fast is not None:
        drawn = fast(rows)
        values = drawn[np.isfinite(drawn)].tolist()
    else:
        values = [v for v in (stat([units[i] for i in idx]) for idx in rows) if v is not None]
    if len(values) < resamples // 2:
        return None, None
    alpha = (1.0 - CI_LEVEL) / 2 * 100
    return metrics.percentile(values, alpha), metrics.percentile(values, 100 - alpha)


def point_estimate(
    run_dir: RunDir, server: str, point_id: str, metric: str, seed: int
) -> tuple[float | None, float | None, float | None]:
    """(value, CI low, CI high) of one headline metric of one measured point; Nones when not measured.

    The bootstrap is seeded from ``seed`` and the (server, point, metric), so the same files give
    the same numbers.
    """
    record, rows = _load_point(run_dir, server, point_id)
    if record is None or rows is None or metric not in _STATISTICS:
        return None, None, None
    units = _units(record.point, rows)

    def stat(chosen: Sequence[Unit]) -> float | None:
        return _STATISTICS[metric](chosen, record.point.kind)

    value = stat(units)
    if value is None:
        return None, None, None
    low, high = bootstrap_value_ci(
        units, stat, [seed, zlib.crc32(f"{point_id}/{server}/{metric}".encode())], metric=metric
    )
    return value, low, high
