"""Energy, joules per token and clock throttling of a point, from the raw NVML samples in its record.

Pure functions of the samples ``byog.bench.nvml_sampler`` records (so verify recomputes them): one
timestamp per sample on the client's ``perf_counter_ns`` clock, so the samples line up with the
decode window of the request rows. Energy comes from the GPU's own energy counter where NVML
has one (``nvmlDeviceGetTotalEnergyConsumption``, millijoules since the driver loaded; Volta and
newer), else from integrating the sampled power; ``energy_source`` says which, and every figure
carries it. A value that cannot be computed (no samples around the window) is ``None``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence

from byog.schemas.bench import ClockStats, PowerMetrics, PowerTrace

NS_PER_S = 1_000_000_000

# nvmlClocksEventReasons (nvml.h; formerly nvmlClocksThrottleReasons): bit -> name.
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "GpuIdle",
    0x2: "ApplicationsClocksSetting",
    0x4: "SwPowerCap",
    0x8: "HwSlowdown",
    0x10: "SyncBoost",
    0x20: "SwThermalSlowdown",
    0x40: "HwThermalSlowdown",
    0x80: "HwPowerBrakeSlowdown",
    0x100: "DisplayClockSetting",
}
# The reasons that hold the clocks below what the workload asked for, by power or heat; each point
# records the share of samples it was set. GpuIdle, ApplicationsClocksSetting, SyncBoost and
# DisplayClockSetting are states, not throttling.
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
# The software power cap is the normal state of a decode-heavy GPU at its power limit: a condition
# of the point, recorded and compared between servers, never a reason to distrust it alone.
# Hardware slowdown, thermal slowdown and the hardware power brake mean the cooling or the power
# delivery failed the workload: those invalidate the point.
POWER_CAP = "SwPowerCap"
INVALIDATING_MASK = 0x8 | 0x20 | 0x40 | 0x80
THROTTLED = "GPU clocks slowed by heat or hardware"  # how the validity sentence of such a point begins
# An A/B at a point measured the two servers under different conditions when their mean SM clocks
# differ by more than this share, or their power-cap shares by more than this many samples in a
# hundred (docs/metrics.md "Power cap" says where both numbers come from).
MAX_SM_CLOCK_GAP = 0.025
MAX_CAP_SHARE_GAP = 0.15


def _interp(ts: Sequence[int], ys: Sequence[float], t: int) -> float | None:
    """``y(t)`` by linear interpolation between the samples around ``t``; ``None`` outside them."""
    if not ts or t < ts[0] or t > ts[-1]:
        return None
    i = bisect.bisect_left(ts, t)
    if ts[i] == t:
        return float(ys[i])
    t0, t1 = ts[i - 1], ts[i]
    return ys[i - 1] + (ys[i] - ys[i - 1]) * (t - t0) / (t1 - t0)


def counter_energy_j(t_ns: Sequence[int], energy_mj: Sequence[float], start_ns: int, end_ns: int) -> float | None:
    """One GPU's energy over ``[start, end]`` from its cumulative counter: ``(E(end) - E(start)) / 1000``.

    ``E(t)`` is the counter (mJ) linearly interpolated between the samples around t; ``None``
    when the samples do not bracket the interval.
    """
    e0, e1 = _interp(t_ns, energy_mj, start_ns), _interp(t_ns, energy_mj, end_ns)
    return None if e0 is None or e1 is None else (e1 - e0) / 1000.0


def integrated_energy_j(t_ns: Sequence[int], power_w: Sequence[float], start_ns: int, end_ns: int) -> float | None:
    """One GPU's energy over ``[start, end]`` by the trapezoid rule on sampled power: ``sum (P_i + P_i+1)/2 x dt``.

    The power curve is linear between samples and interpolated at both ends; ``None`` when the
    samples do not bracket the interval.
    """
    p0, p1 = _interp(t_ns, power_w, start_ns), _interp(t_ns, power_w, end_ns)
    if p0 is None or p1 is None or end_ns < start_ns:
        return None
    lo, hi = bisect.bisect_right(t_ns, start_ns), bisect.bisect_left(t_ns, end_ns)
    times = [start_ns, *t_ns[lo:hi], end_ns]
    powers = [p0, *[float(p) for p in power_w[lo:hi]], p1]
    return (
        math.fsum((powers[i] + powers[i + 1]) / 2 * (times[i + 1] - times[i]) for i in range(len(times) - 1)) / NS_PER_S
    )


def energy_j(
    t_ns: Sequence[int], per_gpu: Sequence[Sequence[float]], source: str, start_ns: int, end_ns: int
) -> float | None:
    """Energy of every sampled GPU over ``[start, end]``: the sum over GPUs of the per-GPU energy.

    ``per_gpu[g]`` is GPU g's counter (mJ, ``source == "counter"``) or power (W,
    ``source == "integrated-power"``) at each sample time.
    """
    one = counter_energy_j if source == "counter" else integrated_energy_j
    parts = [one(t_ns, ys, start_ns, end_ns) for ys in per_gpu]
    return None if not parts or any(p is None for p in parts) else math.fsum(p for p in parts if p is not None)


def windows_energy_j(
    t_ns: Sequence[int], per_gpu: Sequence[Sequence[float]], source: str, windows: Iterable[tuple[int, int]]
) -> float | None:
    """Energy summed over several decode windows (one per wave); ``None`` if any window lacks samples."""
    total = []
    for start, end in windows:
        part = energy_j(t_ns, per_gpu, source, start, end)
        if part is None:
            return None
        total.append(part)
    return math.fsum(total) if total else None


def joules_per_token(energy: float | None, tokens: int) -> float | None:
    """``J/token = energy over the decode windows / output tokens generated inside them``."""
    return energy / tokens if energy is not None and tokens > 0 else None


def mean_power_w(energy: float | None, seconds: float) -> float | None:
    """``P = E / t`` over the decode windows (all sampled GPUs together)."""
    return energy / seconds if energy is not None and seconds > 0 else None


def _inside(t_ns: Sequence[int], start_ns: int, end_ns: int) -> range:
    return range(bisect.bisect_left(t_ns, start_ns), bisect.bisect_right(t_ns, end_ns))


def clock_stats_mhz(
    t_ns: Sequence[int], clocks: Sequence[Sequence[float]], start_ns: int, end_ns: int
) -> dict[str, float | None]:
    """Mean and minimum of a clock (MHz) over the samples inside ``[start, end]``, all GPUs pooled."""
    values = [float(gpu[i]) for gpu in clocks for i in _inside(t_ns, start_ns, end_ns)]
    if not values:
        return {"mean": None, "min": None}
    return {"mean": math.fsum(values) / len(values), "min": min(values)}


def throttle_shares(
    t_ns: Sequence[int], reasons: Sequence[Sequence[int]], start_ns: int, end_ns: int, mask: int = THROTTLE_MASK
) -> dict[str, float]:
    """Per throttling reason: the share of (sample, GPU) readings inside ``[start, end]`` where it was set.

    Only reasons in ``mask`` (power/thermal throttling) are counted; empty when none was set.
    """
    idx = _inside(t_ns, start_ns, end_ns)
    readings = [int(gpu[i]) for gpu in reasons for i in idx]
    if not readings:
        return {}
    out: dict[str, float] = {}
    for bit, name in CLOCK_EVENT_REASONS.items():
        if bit & mask:
            hits = sum(1 for r in readings if r & bit)
            if hits:
                out[name] = hits / len(readings)
    return out


def throttle_reason(shares: dict[str, float]) -> str | None:
    """The validity sentence for a point slowed by heat or hardware (``INVALIDATING_MASK``), or
    ``None``; the power cap alone is never a reason."""
    bad = {name: share for name, share in shares.items() if name != POWER_CAP}
    if not bad:
        return None
    listed = ", ".join(f"{name} in {share:.0%} of samples" for name, share in sorted(bad.items()))
    return f"{THROTTLED} during the point ({listed}): it measured the cooling or power delivery too"


def cap_share(power: PowerMetrics | None) -> float | None:
    """Share of the point's samples with the software power cap set (0 when none was); None unmeasured."""
    if power is None or not power.available or power.throttle is None:
        return None
    return power.throttle.get(POWER_CAP, 0.0)


def conditions_differ(candidate: PowerMetrics | None, baseline: PowerMetrics | None) -> str | None:
    """Why an A/B at one point compared two servers under different GPU conditions, or ``None``.

    Flagged when the mean SM clocks differ by more than ``MAX_SM_CLOCK_GAP`` of the baseline's,
    or the power-cap shares by more than ``MAX_CAP_SHARE_GAP``; unmeasured on either side: ``None``.
    """
    parts = []
    clocks = [p.sm_clock_mhz.mean if p and p.available and p.sm_clock_mhz else None for p in (candidate, baseline)]
    if clocks[0] is not None and clocks[1]:
        gap = clocks[0] / clocks[1] - 1
        if abs(gap) > MAX_SM_CLOCK_GAP:
            parts.append(
                f"mean SM clock {clocks[0]:.0f} vs {clocks[1]:.0f} MHz ({gap:+.1%}, limit ±{MAX_SM_CLOCK_GAP:.1%})"
            )
    caps = [cap_share(candidate), cap_share(baseline)]
    if caps[0] is not None and caps[1] is not None and abs(caps[0] - caps[1]) > MAX_CAP_SHARE_GAP:
        parts.append(
            f"{POWER_CAP} in {caps[0]:.0%} vs {caps[1]:.0%} of samples (limit {MAX_CAP_SHARE_GAP * 100:.0f} points)"
        )
    if not parts:
        return None
    return "the two servers ran under different GPU conditions (" + "; ".join(parts) + ")"


def point_power(
    trace: PowerTrace | None,
    windows: Sequence[tuple[int, int]],
    window_tokens: int,
    span: tuple[int, int] | None,
    span_tokens: int,
) -> PowerMetrics:
    """The power part of a point's metrics from its NVML samples.

    Batch points (``windows`` given): energy, J/token and mean power over the decode windows,
    tokens = tokens inside them. Other workloads: over ``span`` (first measured send to last
    measured token), tokens = every measured output token. Clocks and throttling always over
    ``span``. Without samples: ``available: false`` and the reason, every number absent.
    """
    if trace is None:
        return PowerMetrics(available=False, reason="not recorded (point record written before byog sampled NVML)")
    if not trace.available or not trace.t_ns:
        return PowerMetrics(available=False, reason=trace.reason or "no NVML samples")
    t = trace.t_ns
    source = trace.energy_source or "integrated-power"
    series = trace.per_gpu("energy_mj" if source == "counter" else "power_w")
    if windows:
        energy, tokens, seconds, where = (
            windows_energy_j(t, series, source, windows),
            window_tokens,
            math.fsum((end - start) / NS_PER_S for start, end in windows),
            "decode",
        )
    elif span is not None:
        energy, tokens, seconds, where = (
            energy_j(t, series, source, *span),
            span_tokens,
            (span[1] - span[0]) / NS_PER_S,
            "point",
        )
    else:
        energy, tokens, seconds, where = None, 0, 0.0, None
    lo, hi = span if span is not None else (t[0], t[-1])
    return PowerMetrics(
        available=True,
        energy_source=source,
        window=where,
        energy_j=energy,
        j_per_token=joules_per_token(energy, tokens),
        mean_power_w=mean_power_w(energy, seconds),
        sm_clock_mhz=ClockStats(**clock_stats_mhz(t, trace.per_gpu("sm_clock_mhz"), lo, hi)),
        mem_clock_mhz=ClockStats(**clock_stats_mhz(t, trace.per_gpu("mem_clock_mhz"), lo, hi)),
        throttle=throttle_shares(t, [[int(x) for x in g] for g in trace.per_gpu("clock_event_reasons")], lo, hi),
    )
