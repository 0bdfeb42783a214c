"""Is a point valid? Each check returns a sentence when it fails; a point is never dropped.

Derived from the raw point record and rows only, so ``summarize_bench`` (and verify) recompute
the same reasons the sweep printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from byog.analysis import counters, energy, metrics
from byog.analysis.request_columns import RequestColumns
from byog.core.io import read_json
from byog.schemas.bench import (
    BenchPoint,
    ClientLoad,
    PointComparison,
    PointRecord,
    PointSummary,
    PowerTrace,
    RequestRow,
)
from byog.schemas.migrate import migrate

# A closed loop that keeps fewer than this share of its target in flight measured a lighter load.
MIN_CONCURRENCY_SHARE = 0.95
CLIENT_SATURATED = "client saturated"
# Causes that pass: the load generator's machine was busy, or the GPU's clocks were held down for a
# while. A point invalid for these only is measured again once they cleared (``transient``);
# every other reason (failed or short requests, cache hits, preemptions, miscounts) is the
# configuration's and would repeat.
TRANSIENT_CAUSES = (CLIENT_SATURATED, energy.THROTTLED)


def transient(reasons: Sequence[str]) -> bool:
    """Whether a point is invalid for transient causes only (and so worth measuring again)."""
    return bool(reasons) and all(r.startswith(TRANSIENT_CAUSES) for r in reasons)


def remeasured_note(point: PointSummary) -> str | None:
    """What every surface says of a point measured again: "re-measured 2×, valid on the 2nd"."""
    n = point.remeasured
    if not n:
        return None
    return f"re-measured {n}×, " + (f"valid on the {_ordinal(n)}" if point.valid else "still invalid")


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _some(values: Sequence[Any], n: int = 3) -> str:
    return ", ".join(str(v) for v in values[:n]) + (" ..." if len(values) > n else "")


def load_point_record(path: Path) -> PointRecord:
    """A point record as the current schema reads it (older schema versions migrated)."""
    return PointRecord.model_validate(migrate("bench_point", read_json(path), label=str(path)))


def invalid_reasons(record: PointRecord, rows: Sequence[RequestRow] | RequestColumns | None) -> list[str]:
    """Every reason this point's numbers should not be trusted (empty list = valid).

    ``rows``: the sweep's live records, or the rows file read as columns (what summaries use).
    """
    if record.status != "complete" or rows is None:
        reason = record.error or "no raw rows"
        return [f"point failed: {reason}"]
    columns = rows if isinstance(rows, RequestColumns) else RequestColumns.from_rows(rows)
    point = record.point
    reasons: list[str] = []
    failed = columns.failed
    if failed.any():
        first = columns.error[int(failed.argmax())]
        reasons.append(f"{int(failed.sum())} of {len(columns)} requests failed (first: {first})")
    done = ~failed
    if point.kind == "agentic":  # every turn has its own answer length: the row list holds it
        if isinstance(rows, RequestColumns):
            raise ValueError("an agentic point's validity needs its rows, not only their columns")
        reasons += _agentic_reasons(point, rows)
    else:
        short = columns.n_out[done & (columns.n_out != point.osl)].tolist()
        if short:
            reasons.append(f"{len(short)} requests returned n_out != OSL {point.osl} ({_some(short)})")
    done_positions = done.nonzero()[0].tolist()
    off = [
        (columns.n_in[i], columns.expected_n_in[i])
        for i in done_positions
        if columns.n_in[i] != columns.expected_n_in[i]
    ]
    if off:
        reasons.append(f"{len(off)} requests had a prompt of the wrong length (server counted, expected: {_some(off)})")
    guessed = [i for i in done_positions if not columns.usage_per_chunk[i]]
    if point.request_body == "byog" and guessed:
        reasons.append("the server did not report usage on every chunk: tokens per chunk are guesses")
    tokens = columns.chunk_token_sums
    miscounted = [i for i in guessed if int(tokens[i]) != int(columns.n_out[i])]
    if miscounted:  # the "vllm" body counts one token per chunk; the server's final count says otherwise
        reasons.append(
            f"{len(miscounted)} requests streamed chunks of several tokens but were counted one token per "
            "chunk (request_body 'vllm'): per-token latencies are wrong; use request_body 'byog'"
        )
    reasons += _concurrency_reasons(point, columns)
    reasons += _counter_reasons(record.counter_deltas, columns, cache_expected=point.kind == "agentic")
    measured = columns.take(done & ~columns.warmup)
    reasons += _throttle_reasons(record.power, measured)
    if record.client is not None:
        reasons += _client_reasons(record.client, measured)
    return reasons


def _client_reasons(client: ClientLoad, measured: RequestColumns) -> list[str]:
    """The load generator's own saturation: its CPU share and its event loop's lag (``measured``: the
    completed requests after the warm-up)."""
    reasons: list[str] = []
    if client.cpu_share is not None and client.cpu_share > client.cpu_share_limit:
        reasons.append(
            f"{CLIENT_SATURATED}: it used {client.cpu_share:.0%} of a core (limit {client.cpu_share_limit:.0%})"
        )
    lag = client.loop_lag_p99_s
    if lag is not None:
        itl = metrics.percentile(metrics.itl_s_columns(measured), 50)
        limit = max(client.loop_lag_floor_s, client.loop_lag_share_of_itl * (itl or 0.0))
        # share 0: a fixed limit (what records of schema v1 written before the ITL-relative rule hold)
        rule = (
            f"{client.loop_lag_share_of_itl:.0%} of the median ITL"
            if client.loop_lag_share_of_itl
            else "the fixed limit"
        )
        if lag > limit:
            reasons.append(
                f"{CLIENT_SATURATED}: event-loop lag P99 {lag * 1e3:.1f} ms is over {rule} (limit {limit * 1e3:.1f} ms)"
            )
    return reasons


def _concurrency_reasons(point: BenchPoint, rows: RequestColumns) -> list[str]:
    measured = rows.take(~rows.warmup)
    if point.kind == "batch":
        waves = sorted(set(measured.wave.tolist()))
        empty = [w for w in waves if metrics.decode_window_ns_columns(measured.take(measured.wave == w)) is None]
        if empty:
            return [
                f"waves {_some(empty)} have no decode window: the {point.batch_size} requests never all decoded at once"
            ]
        return []
    if point.kind == "concurrency":
        target = min(point.concurrency or 1, len(measured))
        achieved = (
            metrics.achieved_concurrency_columns(rows, int(measured.t_send_ns.min()), int(measured.t_send_ns.max()))
            if len(measured) > 1
            else None
        )
        if achieved is not None and achieved < MIN_CONCURRENCY_SHARE * target:
            return [f"achieved concurrency {achieved:.2f} is below the target {target}"]
    return []


def _agentic_reasons(point: BenchPoint, rows: Sequence[RequestRow]) -> list[str]:
    reasons = []
    done = [r for r in rows if r.error is None]
    short = [(r.n_out, r.expected_n_out) for r in done if r.n_out != r.expected_n_out]
    if short:
        reasons.append(f"{len(short)} turns returned n_out != their OSL (returned, expected: {_some(short)})")
    if point.sessions and not any(not r.warmup for r in rows):
        reasons.append("no measured turn: every session was cut to nothing by max_context")
    foreign = [
        (r.cached_tokens, r.reusable_tokens)
        for r in done
        if r.cached_tokens is not None and r.reusable_tokens is not None and r.cached_tokens > r.reusable_tokens
    ]
    if foreign:
        reasons.append(
            f"{len(foreign)} turns were served more cached tokens than the workload shares (cached, "
            f"shareable: {_some(foreign)}): the server's cache held these prompts from before, e.g. the "
            "same sessions measured earlier on this server"
        )
    return reasons


def _counter_reasons(deltas: dict[str, Any], rows: RequestColumns, cache_expected: bool = False) -> list[str]:
    """Counter deltas that contradict the point. Prefix-cache hits do, except where reuse is the
    workload (agentic sessions resend their context; the hit rate is then a result)."""
    reasons = []
    hits = deltas.get(counters.PREFIX_CACHE_HITS)
    if hits and not cache_expected:
        reasons.append(f"prefix cache hit {hits:.0f} prompt tokens: prefill was partly skipped")
    preempted = deltas.get(counters.PREEMPTIONS)
    if preempted:
        reasons.append(f"the server preempted {preempted:.0f} requests (KV cache too small for the load)")
    generated = deltas.get(counters.GENERATION_TOKENS)
    client_total = int(rows.n_out.sum())
    if generated is not None and int(generated) != client_total:
        reasons.append(
            f"the server generated {generated:.0f} tokens during the point but the client counted {client_total}"
        )
    return reasons


def _throttle_reasons(power: PowerTrace | None, done: RequestColumns) -> list[str]:
    """A point whose GPU clocks were held down by heat or a hardware slowdown while it measured is
    flagged, like a saturated client: it measured the cooling as well as the software. The software
    power cap is a condition, not a flaw (``byog.analysis.energy.POWER_CAP``).
    ``done``: the measured requests that succeeded."""
    if power is None or not power.available or not power.t_ns or not len(done):
        return []
    span = (int(done.t_send_ns.min()), int(done.last_ns.max()))
    reasons = [[int(x) for x in gpu] for gpu in power.per_gpu("clock_event_reasons")]
    reason = energy.throttle_reason(energy.throttle_shares(power.t_ns, reasons, *span, mask=energy.INVALIDATING_MASK))
    return [reason] if reason else []


def comparison_invalid_reasons(
    points: Mapping[tuple[str, str], PointSummary], comparison: PointComparison
) -> list[str]:
    """Why a candidate/baseline ratio is not a result: ``"<server>: <reasons>"`` for each side whose
    point is invalid (or missing); empty when both are valid. The report and the console say the
    same about every ratio from this."""
    reasons = []
    for server in (comparison.candidate, comparison.baseline):
        point = points.get((server, comparison.point_id))
        if point is None:
            reasons.append(f"{server}: no such point")
        elif not point.valid:
            reasons.append(f"{server}: {'; '.join(point.invalid_reasons) or 'no reason recorded'}")
    return reasons
