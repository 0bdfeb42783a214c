"""Is a point valid? Each check returns a sentence when it fails; a point is never dropped.

Derived from the raw point record and rows only, so ``summarize_bench`` (and verify) recompute
the same reasons the sweep printed.
"""

from __future__ import annotations

from typing import Any, Sequence

from byog.bench import metrics as m
from byog.bench import server_metrics as sm
from byog.bench.client import RequestRecord

# A closed loop that keeps fewer than this share of its target in flight measured a lighter load.
MIN_CONCURRENCY_SHARE = 0.95


def _some(values: Sequence[Any], n: int = 3) -> str:
    return ", ".join(str(v) for v in values[:n]) + (" ..." if len(values) > n else "")


def invalid_reasons(record: dict[str, Any], rows: Sequence[RequestRecord] | None) -> list[str]:
    """Every reason this point's numbers should not be trusted (empty list = valid)."""
    if record.get("status") != "complete" or rows is None:
        reason = record.get("error") or "no raw rows"
        return [f"point failed: {reason}"]
    point = record["point"]
    reasons: list[str] = []
    failed = [r for r in rows if r.error is not None]
    if failed:
        reasons.append(f"{len(failed)} of {len(rows)} requests failed (first: {failed[0].error})")
    done = [r for r in rows if r.error is None]
    short = [r.n_out for r in done if r.n_out != point["osl"]]
    if short:
        reasons.append(f"{len(short)} requests returned n_out != OSL {point['osl']} ({_some(short)})")
    off = [(r.n_in, r.expected_n_in) for r in done if r.n_in != r.expected_n_in]
    if off:
        reasons.append(f"{len(off)} requests had a prompt of the wrong length (server counted, expected: {_some(off)})")
    if any(not r.usage_per_chunk for r in done):
        reasons.append("the server did not report usage on every chunk: tokens per chunk are guesses")
    reasons += _concurrency_reasons(point, rows)
    reasons += _counter_reasons(record.get("counter_deltas") or {}, rows)
    client = record.get("client") or {}
    if client.get("cpu_share") is not None and client["cpu_share"] > client["cpu_share_limit"]:
        reasons.append(f"client saturated: it used {client['cpu_share']:.0%} of a core (limit {client['cpu_share_limit']:.0%})")
    lag = client.get("loop_lag_p99_s")
    if lag is not None:
        itl = m.percentile(m.pooled_itl_s([r.trace() for r in done if not r.warmup]), 50)
        if "loop_lag_floor_s" in client:
            limit = max(client["loop_lag_floor_s"], client["loop_lag_share_of_itl"] * (itl or 0.0))
            rule = f"{client['loop_lag_share_of_itl']:.0%} of the median ITL"
        else:  # records written before the ITL-relative rule (byog 0.1.0 before 7d2a691) carry one fixed limit
            limit, rule = client["loop_lag_limit_s"], "the fixed limit"
        if lag > limit:
            reasons.append(
                f"client saturated: event-loop lag P99 {lag * 1e3:.1f} ms is over {rule} (limit {limit * 1e3:.1f} ms)"
            )
    return reasons


def _concurrency_reasons(point: dict[str, Any], rows: Sequence[RequestRecord]) -> list[str]:
    measured = [r for r in rows if not r.warmup]
    if point["kind"] == "batch":
        waves: dict[int, list[RequestRecord]] = {}
        for r in measured:
            waves.setdefault(r.wave, []).append(r)
        empty = [w for w, reqs in sorted(waves.items()) if m.decode_window_ns([r.trace() for r in reqs]) is None]
        if empty:
            return [f"waves {_some(empty)} have no decode window: the {point['batch_size']} requests never all decoded at once"]
        return []
    if point["kind"] == "concurrency":
        target = min(point["concurrency"], len(measured))
        sends = sorted(r.t_send_ns for r in measured)
        achieved = m.achieved_concurrency([r.trace() for r in rows], sends[0], sends[-1]) if len(sends) > 1 else None
        if achieved is not None and achieved < MIN_CONCURRENCY_SHARE * target:
            return [f"achieved concurrency {achieved:.2f} is below the target {target}"]
    return []


def _counter_reasons(deltas: dict[str, Any], rows: Sequence[RequestRecord]) -> list[str]:
    reasons = []
    hits = deltas.get(sm.PREFIX_CACHE_HITS)
    if hits:
        reasons.append(f"prefix cache hit {hits:.0f} prompt tokens: prefill was partly skipped")
    preempted = deltas.get(sm.PREEMPTIONS)
    if preempted:
        reasons.append(f"the server preempted {preempted:.0f} requests (KV cache too small for the load)")
    generated = deltas.get(sm.GENERATION_TOKENS)
    client_total = sum(r.n_out for r in rows)
    if generated is not None and int(generated) != client_total:
        reasons.append(f"the server generated {generated:.0f} tokens during the point but the client counted {client_total}")
    return reasons
