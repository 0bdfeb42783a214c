"""Batch waves from recorded timings, for driving the stopping rule and the sweep's batch loop
without a server: each wave's B requests send at once and stream one token a chunk every step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from byog.bench.workloads import PointRun
from byog.schemas.bench import BenchPoint, PointRecord, RequestRow, WaveStopping

MS = 1_000_000


def wave_rows(point: BenchPoint, wave: int, t0: int, step_ns: int, jitter_ns: int = 0) -> list[RequestRow]:
    """One wave of the point's B requests sent at ``t0``, a token every ``step_ns`` (``jitter_ns``
    moves chunks off the microsecond grid that stored rows keep)."""
    b = point.batch_size or 1
    return [
        RequestRow(
            request_index=wave * b + i,
            wave=wave,
            warmup=wave < point.warmup_waves,
            expected_n_in=point.isl,
            t_send_ns=t0,
            n_in=point.isl,
            n_out=point.osl,
            chunk_tokens=[1] * point.osl,
            chunk_t_ns=[t0 + (k + 1) * step_ns + (jitter_ns * (k + i)) % 997 for k in range(point.osl)],
        )
        for i in range(b)
    ]


def replay(
    point: BenchPoint,
    steps_ns: Sequence[int],
    after_wave: Callable[[list[RequestRow]], bool] | None,
    jitter_ns: int = 0,
) -> list[RequestRow]:
    """The batch loop of ``byog.bench.workloads`` on recorded step times: warm-up waves, then measured
    waves until ``after_wave`` says stop (or the fixed ``waves`` without one)."""
    measured = point.waves if after_wave is None else point.wave_cap
    rows: list[RequestRow] = []
    t = 10**9
    for wave in range(point.warmup_waves + measured):
        batch = wave_rows(point, wave, t, steps_ns[wave % len(steps_ns)], jitter_ns)
        rows += batch
        t = max(r.chunk_t_ns[-1] for r in batch) + MS
        if wave >= point.warmup_waves and after_wave is not None and after_wave(batch):
            break
    return rows


def replaying_run_point(steps_ns: Sequence[int]) -> Callable[..., PointRun]:
    """A stand-in for ``byog.bench.workloads.run_point`` that replays ``steps_ns`` (one per wave)."""

    def run_point(base_url: str, model: str, point: BenchPoint, prompts: Any, progress: Any, **kwargs: Any) -> PointRun:
        rows = replay(point, steps_ns, kwargs.get("after_wave"))
        return PointRun(rows, rows[0].t_send_ns, rows[-1].chunk_t_ns[-1], 0.1, 0.0, 0.0)

    return run_point


def stopped_record(server: str, point: BenchPoint, rows: Sequence[RequestRow], stopping: WaveStopping) -> PointRecord:
    """A complete point record of ``rows`` with its stopping record (what the sweep writes)."""
    return PointRecord(
        server=server,
        point=point,
        prompts_label="random-ids",
        status="complete",
        started_at="2026-12-06T00:00:00+00:00",
        duration_s=1.0,
        t_start_ns=rows[0].t_send_ns,
        t_end_ns=rows[-1].chunk_t_ns[-1],
        stopping=stopping,
        byog_version="test",
    )
