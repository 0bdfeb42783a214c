"""The bench part of summary.json: a pure, deterministic function of the raw point files.

``verify`` recomputes it from a bundle and compares, so nothing here may depend on the clock,
the machine or dict order: the bootstrap is seeded from the plan's first seed and the point id.
"""

from __future__ import annotations

import math
import zlib
from typing import TYPE_CHECKING, Any, Callable, Sequence

from byog.bench import metrics as m
from byog.bench import server_metrics as sm
from byog.bench.client import RequestRecord
from byog.bench.validity import invalid_reasons
from byog.bundles.rundir import RunDir
from byog.ioutil import read_json
from byog.plans.expand import BenchPoint, expand_plan
from byog.plans.model import Plan

if TYPE_CHECKING:
    import numpy as np

BOOTSTRAP_RESAMPLES = 1000
CI_LEVEL = 0.95
# Headline metrics compared per point: (metric name, how to read it from a point's metrics).
HEADLINE = ("decode_tok_s", "tpot_s.p50", "ttft_s.p50", "tok_s_user.p50")


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _clean(obj: Any) -> Any:
    """JSON has no NaN or infinity: any non-finite float becomes null."""
    if isinstance(obj, float):
        return _finite(obj)
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


# --- units: a wave (batch) or a request (other workloads) ------------------------------------

class _Unit:
    """What the statistics of one resampling unit need."""

    __slots__ = ("tpots", "ttfts", "itls", "tokens", "window_s", "n_out")

    def __init__(self, reqs: Sequence[m.RequestTrace], window: tuple[int, int] | None) -> None:
        import numpy as np

        # Arrays, because the bootstrap pools them a thousand times per comparison.
        self.tpots = np.array([x for x in (m.tpot_s(r) for r in reqs) if x is not None], dtype=float)
        self.ttfts = np.array([x for x in (m.ttft_s(r) for r in reqs) if x is not None], dtype=float)
        self.itls = np.asarray(m.pooled_itl_s(reqs), dtype=float)
        self.tokens = m.tokens_in_window(reqs, window) if window else 0
        self.window_s = (window[1] - window[0]) / m.NS_PER_S if window else 0.0
        self.n_out = sum(r.n_out for r in reqs if r.ok)


def _units(point: dict[str, Any], rows: Sequence[RequestRecord]) -> list[_Unit]:
    measured = [r for r in rows if not r.warmup]
    if point["kind"] == "batch":
        waves: dict[int, list[m.RequestTrace]] = {}
        for r in measured:
            waves.setdefault(r.wave, []).append(r.trace())
        return [_Unit(reqs, m.decode_window_ns(reqs)) for _, reqs in sorted(waves.items())]
    return [_Unit([r.trace()], None) for r in sorted(measured, key=lambda r: r.request_index)]


def _inverse(x: float | None) -> float | None:
    return 1.0 / x if x else None


def _pool(units: Sequence[_Unit], attr: str) -> "np.ndarray":
    import numpy as np

    return np.concatenate([getattr(u, attr) for u in units]) if units else np.empty(0)


def _decode_tok_s(units: Sequence[_Unit], kind: str) -> float | None:
    if kind != "batch":
        return None
    windows = [u for u in units if u.window_s > 0]
    if not windows:
        return None
    return m.decode_tok_s(sum(u.tokens for u in windows), math.fsum(u.window_s for u in windows))


_STATISTICS: dict[str, Callable[[Sequence[_Unit], str], float | None]] = {
    "decode_tok_s": _decode_tok_s,
    "tpot_s.p50": lambda units, kind: m.percentile(_pool(units, "tpots"), 50),
    "ttft_s.p50": lambda units, kind: m.percentile(_pool(units, "ttfts"), 50),
    "tok_s_user.p50": lambda units, kind: _inverse(m.percentile(_pool(units, "tpots"), 50)),
}


# --- one point ------------------------------------------------------------------------------

def point_metrics(point: dict[str, Any], rows: Sequence[RequestRecord], deltas: dict[str, Any],
                  units: list[_Unit] | None = None) -> dict[str, Any]:
    """Every metric of one point from its measured (non-warm-up) requests and counter deltas."""
    measured = [r.trace() for r in rows if not r.warmup]
    units = _units(point, rows) if units is None else units
    tpots = _pool(units, "tpots")
    al = m.acceptance_length(deltas.get(sm.SPEC_ACCEPTED, 0.0), deltas.get(sm.SPEC_DRAFTS, 0.0))
    per_pos = deltas.get(sm.SPEC_ACCEPTED_PER_POS)
    out: dict[str, Any] = {
        "ttft_s": m.latency_stats(_pool(units, "ttfts")),
        "tpot_s": m.latency_stats(tpots),
        "itl_s": m.latency_stats(_pool(units, "itls")),
        "itl_request_mean_s": m.latency_stats([x for x in (m.itl_mean_s(r) for r in measured) if x is not None]),
        "e2e_latency_s": m.latency_stats([x for x in (m.e2e_latency_s(r) for r in measured) if x is not None]),
        "tok_s_user": m.interactivity_stats(tpots),
        "output_tok_s": m.output_tok_s(measured),
        "decode_tok_s": _decode_tok_s(units, point["kind"]),
        "decode_step_s": None,
        "decode_window_s": None,
        "tokens_in_window": None,
        "tokens_per_step": None,
        "crosscheck_decode_tok_s": None,
        "acceptance_length": al,
        "acceptance_per_position": (m.acceptance_per_position(per_pos, deltas.get(sm.SPEC_DRAFTS, 0.0))
                                    if isinstance(per_pos, list) else None),
        "achieved_concurrency": None,
    }
    if point["kind"] == "batch":
        windows = [u for u in units if u.window_s > 0]
        window_s = math.fsum(u.window_s for u in windows)
        tokens = sum(u.tokens for u in windows)
        batch = point["batch_size"]
        # Tokens per engine step: the server's counters when it exports them (Δgenerated / Δsteps
        # over the point), else B x acceptance length.
        gen, steps = deltas.get(sm.GENERATION_TOKENS), deltas.get(sm.ITERATIONS)
        per_step = gen / steps if gen and steps else batch * (al or 1.0)
        decode_steps = tokens / per_step if per_step else 0.0
        step_s = m.decode_step_s(window_s, decode_steps)
        out.update(
            decode_window_s=window_s or None,
            tokens_in_window=tokens,
            tokens_per_step=per_step,
            decode_step_s=step_s,
            crosscheck_decode_tok_s=m.crosscheck_decode_tok_s(1.0 / step_s, al or 1.0, batch) if step_s else None,
        )
    elif point["kind"] == "concurrency":
        traces = [r.trace() for r in rows]
        sends = sorted(r.t_send_ns for r in measured)
        if len(sends) > 1:
            out["achieved_concurrency"] = m.achieved_concurrency(traces, sends[0], sends[-1])
    return out


def _load_point(run_dir: RunDir, server: str, point_id: str) -> tuple[dict[str, Any] | None, list[RequestRecord] | None]:
    from byog.bench.rows import read_rows

    record_path = run_dir.bench_point(server, point_id)
    record = read_json(record_path) if record_path.is_file() else None
    rows = read_rows(run_dir.bench_rows(server, point_id)) if run_dir.bench_point_complete(server, point_id) else None
    return record, rows


def _point_entry(server: str, point: BenchPoint, record: dict[str, Any] | None, rows: list[RequestRecord] | None,
                 units: list[_Unit] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "server": server, "point_id": point.point_id, "workload": point.workload, "kind": point.kind,
        "batch_size": point.batch_size, "concurrency": point.concurrency, "rate": point.rate,
        "isl": point.isl, "osl": point.osl, "api": point.api,
        "prompts": record["prompts_label"] if record else None,
    }
    if record is None:
        entry.update(valid=False, invalid_reasons=["not measured (no point record)"], n_requests=0, metrics=None)
        return entry
    reasons = invalid_reasons(record, rows)
    measured = [r for r in rows or [] if not r.warmup]
    entry.update(
        valid=not reasons,
        invalid_reasons=reasons,
        n_requests=len(measured),
        metrics=point_metrics(record["point"], rows, record.get("counter_deltas") or {}, units) if rows is not None else None,
    )
    return entry


# --- A/B ------------------------------------------------------------------------------------

def _pooled_p50_rows(units: Sequence[_Unit], attr: str) -> Callable[["np.ndarray"], "np.ndarray"] | None:
    """P50 of the pooled values of many resamples at once: rows of unit indices -> one P50 per row.

    Only when every unit holds the same number of values (a batch wave of B requests), so the
    resampled pools form a matrix; the order inside a pool does not change its percentile.
    """
    import numpy as np

    arrays = [getattr(u, attr) for u in units]
    if len({a.size for a in arrays}) != 1 or arrays[0].size == 0 or not all(np.isfinite(a).all() for a in arrays):
        return None
    matrix = np.stack(arrays)
    return lambda rows: np.percentile(matrix[rows].reshape(len(rows), -1), 50, axis=1)


def _vectorised(metric: str, units: Sequence[_Unit]) -> Callable[["np.ndarray"], "np.ndarray"] | None:
    """The statistic over many resamples in one numpy call, where it has such a form."""
    if metric == "tpot_s.p50":
        return _pooled_p50_rows(units, "tpots")
    if metric == "ttft_s.p50":
        return _pooled_p50_rows(units, "ttfts")
    if metric == "tok_s_user.p50":
        p50 = _pooled_p50_rows(units, "tpots")
        return None if p50 is None else (lambda rows: 1.0 / p50(rows))
    return None


def bootstrap_ratio_ci(cand: Sequence[_Unit], base: Sequence[_Unit], stat: Callable[[Sequence[_Unit]], float | None],
                       seed: list[int], resamples: int = BOOTSTRAP_RESAMPLES,
                       metric: str | None = None) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of stat(cand)/stat(base), resampling each side's units with replacement.

    ``(None, None)`` with fewer than two units on a side: there is no noise estimate to give.
    The resampled indices are drawn in one fixed order (candidate, then baseline, per resample);
    a ``metric`` with a vectorised form is then evaluated on all resamples at once.
    """
    import numpy as np

    if len(cand) < 2 or len(base) < 2:
        return None, None  # one wave (or request) says nothing about noise
    rng = np.random.default_rng(seed)
    cand_rows = np.empty((resamples, len(cand)), dtype=np.int64)
    base_rows = np.empty((resamples, len(base)), dtype=np.int64)
    for r in range(resamples):
        cand_rows[r] = rng.integers(0, len(cand), len(cand))
        base_rows[r] = rng.integers(0, len(base), len(base))
    fast_cand, fast_base = (_vectorised(metric, cand), _vectorised(metric, base)) if metric else (None, None)
    if fast_cand is not None and fast_base is not None:
        sc, sb = fast_cand(cand_rows), fast_base(base_rows)
        keep = np.isfinite(sc) & np.isfinite(sb) & (sb != 0)
        ratios = (sc[keep] / sb[keep]).tolist()
    else:
        ratios = []
        for c_idx, b_idx in zip(cand_rows, base_rows):
            sc_one, sb_one = stat([cand[i] for i in c_idx]), stat([base[i] for i in b_idx])
            if sc_one is not None and sb_one:
                ratios.append(sc_one / sb_one)
    if len(ratios) < resamples // 2:
        return None, None
    alpha = (1.0 - CI_LEVEL) / 2 * 100
    return m.percentile(ratios, alpha), m.percentile(ratios, 100 - alpha)


def _comparisons(plan: Plan, loaded: dict[tuple[str, str], tuple[dict[str, Any] | None, list[RequestRecord] | None]],
                 points: list[BenchPoint], units_of: dict[tuple[str, str], list[_Unit]]) -> list[dict[str, Any]]:
    out = []
    for point in points:
        for candidate, baseline in plan.comparisons:
            base_record, base_rows = loaded.get((baseline, point.point_id), (None, None))
            cand_record, cand_rows = loaded.get((candidate, point.point_id), (None, None))
            if base_record is None or base_rows is None or cand_record is None or cand_rows is None:
                continue
            base_units = units_of[(baseline, point.point_id)]
            cand_units = units_of[(candidate, point.point_id)]
            for metric in HEADLINE:
                def stat(units: Sequence[_Unit], _metric: str = metric) -> float | None:
                    return _STATISTICS[_metric](units, point.kind)

                cv, bv = stat(cand_units), stat(base_units)
                if cv is None or not bv:
                    continue
                seed = [plan.seeds[0], zlib.crc32(f"{point.point_id}/{candidate}/{metric}".encode())]
                low, high = bootstrap_ratio_ci(cand_units, base_units, stat, seed, metric=metric)
                out.append({
                    "point_id": point.point_id, "candidate": candidate, "baseline": baseline, "metric": metric,
                    "candidate_value": cv, "baseline_value": bv, "ratio": cv / bv, "ci_low": low, "ci_high": high,
                    "ci_level": CI_LEVEL, "units": "waves" if point.kind == "batch" else "requests",
                    "within_noise": None if low is None or high is None else bool(low <= 1.0 <= high),
                })
    return out


def summarize_bench(run_dir: RunDir, plan: Plan) -> dict[str, Any]:
    """Points (metrics + validity) of every server and the candidate/baseline comparisons."""
    points = expand_plan(plan)
    loaded: dict[tuple[str, str], tuple[dict[str, Any] | None, list[RequestRecord] | None]] = {}
    units_of: dict[tuple[str, str], list[_Unit]] = {}  # per-request formulas run once per point
    entries = []
    for server in plan.servers:
        for point in points:
            if server not in point.servers:
                continue
            record, rows = _load_point(run_dir, server, point.point_id)
            if record is not None and record.get("status") != "complete":
                rows = None
            loaded[(server, point.point_id)] = (record, rows)
            if record is not None and rows is not None:
                units_of[(server, point.point_id)] = _units(record["point"], rows)
            entries.append(_point_entry(server, point, record, rows, units_of.get((server, point.point_id))))
    return _clean({"points": entries, "comparisons": _comparisons(plan, loaded, points, units_of)})
