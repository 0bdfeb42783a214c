"""Wait for a transient cause of an invalid point to clear before the point is measured again.

Two causes pass (``byog.analysis.validity.TRANSIENT_CAUSES``):
- **client saturated**: the machine running byog's client was busy. Cleared when an idle event loop
  fires a 5 ms timer on time (P99 lateness at most the saturation floor) and at least one core of
  the machine is idle, over a one-second probe.
- **GPU clocks slowed** (heat, hardware slowdown): cleared when NVML shows none of those reasons on
  the server's GPUs over a one-second probe (NVML absent: nothing to wait for).

Probes repeat until the causes clear or ``SETTLE_MAX_S`` has passed; the point is then measured
again either way, and its record says whether the cause had cleared.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psutil

from byog.analysis import energy
from byog.analysis.metrics import percentile
from byog.analysis.validity import CLIENT_SATURATED
from byog.bench.nvml_sampler import PowerSampler
from byog.bench.workloads import LAG_TICK_S, LOOP_LAG_FLOOR_S

SETTLE_MAX_S = 30.0
PROBE_S = 1.0
Probe = Callable[[], bool]  # True: this cause is clear now (takes about PROBE_S)


def client_clear(probe_s: float = PROBE_S) -> bool:
    """An idle event loop keeps time and one core of the machine is idle."""

    async def lags() -> list[float]:
        out: list[float] = []
        end = time.perf_counter() + probe_s
        while time.perf_counter() < end:
            due = time.perf_counter() + LAG_TICK_S
            await asyncio.sleep(LAG_TICK_S)
            out.append(max(0.0, time.perf_counter() - due))
        return out

    psutil.cpu_percent(interval=None)  # starts the machine-wide CPU counter
    lag = percentile(asyncio.run(lags()), 99) or 0.0
    idle_cores = (100.0 - psutil.cpu_percent(interval=None)) / 100.0 * (psutil.cpu_count() or 1)
    return lag <= LOOP_LAG_FLOOR_S and idle_cores >= 1.0


def gpu_clear(gpus: list[int] | None, probe_s: float = PROBE_S) -> bool:
    """No heat or hardware slowdown on the server's GPUs (or no NVML to say there is)."""
    sampler = PowerSampler(gpus).start()
    time.sleep(probe_s)
    trace = sampler.stop()
    if not trace.available:
        return True
    return not any(int(r) & energy.INVALIDATING_MASK for gpu in trace.clock_event_reasons or [] for r in gpu)


@dataclass(frozen=True)
class Settled:
    waited_s: float
    cleared: bool


def wait_until_clear(
    reasons: Sequence[str],
    gpus: list[int] | None,
    *,
    probes: dict[str, Probe] | None = None,
    max_s: float = SETTLE_MAX_S,
    clock: Callable[[], float] = time.monotonic,
) -> Settled:
    """Probe each cause among ``reasons`` until all are clear or ``max_s`` has passed."""
    known: dict[str, Probe] = probes or {CLIENT_SATURATED: client_clear, energy.THROTTLED: lambda: gpu_clear(gpus)}
    needed = [probe for cause, probe in known.items() if any(r.startswith(cause) for r in reasons)]
    t0 = clock()
    while True:
        if all(probe() for probe in needed):
            return Settled(clock() - t0, True)
        if clock() - t0 >= max_s:
            return Settled(clock() - t0, False)
