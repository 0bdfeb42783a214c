"""The three workloads (batch, concurrency, rate) and the client-saturation monitor around them.

``run_point`` runs one point in a fresh event loop (uvloop when installed) and returns the raw
request records plus how busy the client itself was. It never raises for a failed request:
failures are recorded per request; the sweep decides what they mean.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psutil

from byog.analysis.metrics import percentile
from byog.bench.client import StreamingClient
from byog.bench.prompts import Prompt
from byog.schemas.bench import BenchPoint, ClientLoad, RequestRow

# Client saturation limits. A client over these limits was late to read its sockets, so its
# timestamps measure itself, not the server. One core is the most one Python process can use.
CPU_SHARE_LIMIT = 0.90
# The event loop's lateness (P99 of a 5 ms timer) may be at most this share of the point's median
# inter-token latency (never below the floor): beyond it, per-token timestamps are late by a
# noticeable part of what they measure.
LOOP_LAG_SHARE_OF_ITL = 0.25
LOOP_LAG_FLOOR_S = 0.002  # uvloop timers fire in whole milliseconds: ~1 ms P99 lateness even when idle
LAG_TICK_S = 0.005

Progress = Callable[[int], None]  # called with the number of requests just finished
Hook = Callable[[], None]  # called between the warm-up and the measured waves (nothing in flight)
# called with each measured wave's rows as it ends; True stops the point there (sequential stopping)
AfterWave = Callable[[list[RequestRow]], bool]


def client_load(cpu_share: float | None, loop_lag_p99_s: float | None, loop_lag_max_s: float | None) -> ClientLoad:
    """The client's own load over a point, with the limits its validity is judged by."""
    return ClientLoad(
        cpu_share=cpu_share,
        loop_lag_p99_s=loop_lag_p99_s,
        loop_lag_max_s=loop_lag_max_s,
        cpu_share_limit=CPU_SHARE_LIMIT,
        loop_lag_share_of_itl=LOOP_LAG_SHARE_OF_ITL,
        loop_lag_floor_s=LOOP_LAG_FLOOR_S,
    )


@dataclass
class PointRun:
    records: list[RequestRow]
    t_start_ns: int
    t_end_ns: int
    cpu_share: float | None
    loop_lag_p99_s: float | None
    loop_lag_max_s: float | None


class LoadMonitor:
    """Event-loop lag (how late a periodic timer fires) and the process's CPU share over the point."""

    def __init__(self) -> None:
        self.lags_s: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._cpu0 = 0.0
        self._wall0 = 0.0
        self.cpu_share: float | None = None

    @staticmethod
    def _cpu_s() -> float:
        t = psutil.Process().cpu_times()
        return float(t.user + t.system)

    async def _tick(self) -> None:
        # perf_counter, not loop.time(): uvloop's clock ticks in whole milliseconds.
        while True:
            due = time.perf_counter() + LAG_TICK_S
            await asyncio.sleep(LAG_TICK_S)
            self.lags_s.append(max(0.0, time.perf_counter() - due))

    def start(self) -> None:
        self._cpu0, self._wall0 = self._cpu_s(), time.perf_counter()
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def stop(self) -> None:
        wall = time.perf_counter() - self._wall0
        self.cpu_share = (self._cpu_s() - self._cpu0) / wall if wall > 0 else None
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def _batch(
    client: StreamingClient,
    point: BenchPoint,
    prompts: Sequence[Prompt],
    progress: Progress,
    on_measure_start: Hook | None = None,
    after_wave: AfterWave | None = None,
) -> list[RequestRow]:
    """W warm-up waves then R measured waves; each wave sends exactly B requests at once and waits for all.

    ``on_measure_start`` runs (in a thread, so the loop's lag monitor does not see it) after the
    last warm-up wave, when no request is in flight: the sweep snapshots /metrics there.
    ``after_wave``: the point's stopping rule, asked after each measured wave (up to its wave cap);
    without one the point measures exactly ``waves``.
    """
    b = point.batch_size or 1
    records: list[RequestRow] = []
    measured = point.waves if after_wave is None else point.wave_cap
    for wave in range(point.warmup_waves + measured):
        if wave == point.warmup_waves and on_measure_start is not None:
            await asyncio.get_running_loop().run_in_executor(None, on_measure_start)
        batch = [
            RequestRow(
                request_index=wave * b + i,
                wave=wave,
                warmup=wave < point.warmup_waves,
                expected_n_in=prompts[wave * b + i].expected_n_in,
            )
            for i in range(b)
        ]
        await asyncio.gather(*(client.send(prompts[r.request_index].body, r) for r in batch))
        records.extend(batch)
        progress(b)
        if wave >= point.warmup_waves and after_wave is not None and after_wave(batch):
            break
    return records


async def _concurrency(
    client: StreamingClient, point: BenchPoint, prompts: Sequence[Prompt], progress: Progress
) -> list[RequestRow]:
    """Closed loop: C workers; each sends its next request the moment its previous one ends."""
    total = point.total_requests
    records = [
        RequestRow(request_index=i, wave=-1, warmup=i < point.warmup_prompts, expected_n_in=prompts[i].expected_n_in)
        for i in range(total)
    ]
    queue = iter(records)

    async def worker() -> None:
        for record in queue:  # a shared iterator: each record is taken by exactly one worker
            await client.send(prompts[record.request_index].body, record)
            progress(1)

    await asyncio.gather(*(worker() for _ in range(min(point.concurrency or 1, total))))
    return records


def poisson_offsets_s(rate: float, count: int, seed: int) -> list[float]:
    """Send times (s after start) of a Poisson process: cumulative sums of Exp(rate) gaps, seeded."""
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=count)
    offsets: list[float] = np.cumsum(gaps).tolist()
    return offsets


async def _rate(
    client: StreamingClient, point: BenchPoint, prompts: Sequence[Prompt], progress: Progress
) -> list[RequestRow]:
    """Open loop: requests leave at Poisson times whatever the server's state."""
    assert point.rate is not None
    offsets = poisson_offsets_s(point.rate, point.num_prompts, point.arrival_seed)
    records = [
        RequestRow(request_index=i, wave=-1, warmup=False, expected_n_in=prompts[i].expected_n_in)
        for i in range(point.num_prompts)
    ]
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def one(record: RequestRow, offset: float) -> None:
        await asyncio.sleep(max(0.0, start + offset - loop.time()))
        await client.send(prompts[record.request_index].body, record)
        progress(1)

    await asyncio.gather(*(one(r, o) for r, o in zip(records, offsets, strict=True)))
    return records


_WORKLOADS = {"batch": _batch, "concurrency": _concurrency, "rate": _rate}


async def _run(
    base_url: str,
    model: str,
    point: BenchPoint,
    prompts: Sequence[Prompt],
    progress: Progress,
    timeout_s: float,
    extra_body: dict[str, Any] | None,
    on_measure_start: Hook | None,
    after_wave: AfterWave | None = None,
) -> PointRun:
    monitor = LoadMonitor()
    async with StreamingClient(
        base_url, model, point.api, point.osl, timeout_s=timeout_s, extra_body=extra_body, body_style=point.request_body
    ) as client:
        monitor.start()
        t_start = time.perf_counter_ns()
        if point.kind == "batch":
            records = await _batch(client, point, prompts, progress, on_measure_start, after_wave)
        else:
            records = await _WORKLOADS[point.kind](client, point, prompts, progress)
        t_end = time.perf_counter_ns()
        await monitor.stop()
    return PointRun(
        records,
        t_start,
        t_end,
        monitor.cpu_share,
        percentile(monitor.lags_s, 99),
        max(monitor.lags_s) if monitor.lags_s else None,
    )


def run_point(
    base_url: str,
    model: str,
    point: BenchPoint,
    prompts: Sequence[Prompt],
    progress: Progress = lambda _: None,
    timeout_s: float = 3600.0,
    extra_body: dict[str, Any] | None = None,
    on_measure_start: Hook | None = None,
    after_wave: AfterWave | None = None,
) -> PointRun:
    """Run one point in its own event loop and return its raw records.

    ``extra_body``: fields merged into every request body (None removes a field): experiments only
    (``benchmarks/fidelity.py``); a plan's points send what their ``request_body`` style says.
    ``on_measure_start``: batch points only, called once between the warm-up and measured waves.
    ``after_wave``: batch points only, the stopping rule (``byog.analysis.wave_stopping``).
    """
    if len(prompts) < point.total_requests:
        raise ValueError(f"{point.point_id} needs {point.total_requests} prompts, got {len(prompts)}")
    coro = _run(base_url, model, point, prompts, progress, timeout_s, extra_body, on_measure_start, after_wave)
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)
