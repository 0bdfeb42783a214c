"""Energy over the decode window, J/token and the throttle flag, on hand-computed samples."""

from __future__ import annotations

import pytest

from byog.analysis import energy as e
from byog.schemas.bench import ClockStats, PowerMetrics

S = 1_000_000_000  # ns


def test_counter_energy_interpolates_at_window_edges() -> None:
    # counter (mJ) at 0, 1, 2, 3 s: 0, 500, 1500, 2000 -> window [0.5 s, 2.5 s]
    t = [0, S, 2 * S, 3 * S]
    mj = [0.0, 500.0, 1500.0, 2000.0]
    # E(0.5) = 250, E(2.5) = 1750 -> 1500 mJ = 1.5 J
    assert e.counter_energy_j(t, mj, S // 2, 5 * S // 2) == pytest.approx(1.5)
    assert e.counter_energy_j(t, mj, 0, 3 * S) == pytest.approx(2.0)


def test_energy_is_none_when_samples_do_not_bracket_the_window() -> None:
    t, mj = [S, 2 * S], [0.0, 100.0]
    assert e.counter_energy_j(t, mj, 0, 2 * S) is None
    assert e.counter_energy_j(t, mj, S, 3 * S) is None
    assert e.integrated_energy_j(t, [100.0, 100.0], 0, S) is None
    assert e.energy_j([], [], "counter", 0, S) is None


def test_integrated_power_trapezoid() -> None:
    # power 100 W at 0 s, 300 W at 2 s (linear): mean 200 W over 2 s = 400 J
    t, p = [0, 2 * S], [100.0, 300.0]
    assert e.integrated_energy_j(t, p, 0, 2 * S) == pytest.approx(400.0)
    # [0.5 s, 1.5 s]: P(0.5) = 150, P(1.5) = 250 -> 200 W x 1 s
    assert e.integrated_energy_j(t, p, S // 2, 3 * S // 2) == pytest.approx(200.0)
    # with an inner sample: 100 W at 0, 100 W at 1 s, 300 W at 2 s -> 100 + 200 = 300 J
    assert e.integrated_energy_j([0, S, 2 * S], [100.0, 100.0, 300.0], 0, 2 * S) == pytest.approx(300.0)


def test_counter_and_integrated_agree_on_constant_power() -> None:
    t = [i * S // 10 for i in range(31)]  # 10 Hz for 3 s
    watts = [250.0] * len(t)
    mj = [250.0 * 1000 * i / 10 for i in range(len(t))]  # 250 W = 250,000 mJ/s
    start, end = 3 * S // 10 + 12345, 27 * S // 10 - 999
    by_counter = e.energy_j(t, [mj], "counter", start, end)
    by_power = e.energy_j(t, [watts], "integrated-power", start, end)
    assert by_counter == pytest.approx(by_power)
    assert by_counter == pytest.approx(250.0 * (end - start) / S)


def test_energy_sums_gpus_and_windows() -> None:
    t = [0, S, 2 * S, 3 * S]
    gpu0 = [0.0, 1000.0, 2000.0, 3000.0]  # 1 W... 1 J/s
    gpu1 = [0.0, 3000.0, 6000.0, 9000.0]  # 3 J/s
    assert e.energy_j(t, [gpu0, gpu1], "counter", 0, S) == pytest.approx(4.0)
    assert e.windows_energy_j(t, [gpu0, gpu1], "counter", [(0, S), (2 * S, 3 * S)]) == pytest.approx(8.0)
    assert e.windows_energy_j(t, [gpu0, gpu1], "counter", [(0, S), (2 * S, 4 * S)]) is None


def test_joules_per_token_and_mean_power() -> None:
    assert e.joules_per_token(120.0, 400) == pytest.approx(0.3)
    assert e.joules_per_token(None, 400) is None
    assert e.joules_per_token(120.0, 0) is None
    assert e.mean_power_w(120.0, 0.5) == pytest.approx(240.0)


def test_throttle_shares_count_only_throttling_inside_the_window() -> None:
    t = [0, S, 2 * S, 3 * S, 4 * S]
    # GPU 0: idle at first, power cap in one sample inside; GPU 1: sync boost only (not throttling)
    gpu0 = [0x1, 0x0, 0x4, 0x0, 0x40]
    gpu1 = [0x10, 0x10, 0x10, 0x10, 0x10]
    shares = e.throttle_shares(t, [gpu0, gpu1], S, 3 * S)
    assert shares == {"SwPowerCap": pytest.approx(1 / 6)}  # 1 of 3 samples x 2 GPUs
    assert e.throttle_shares(t, [gpu0, gpu1], S, S + 1) == {}
    assert e.throttle_reason(shares) is None  # the power cap alone is a condition, not a reason
    assert e.throttle_reason({}) is None
    # the thermal slowdown at 4 s is outside [1 s, 3 s] but inside [0, 4 s]
    whole = e.throttle_shares(t, [gpu0, gpu1], 0, 4 * S)
    assert "HwThermalSlowdown" in whole
    reason = e.throttle_reason(whole)
    assert reason is not None and "HwThermalSlowdown in 10% of samples" in reason and "SwPowerCap" not in reason


def test_heat_hardware_and_the_power_brake_invalidate_the_power_cap_does_not() -> None:
    for bit, name in [
        (0x8, "HwSlowdown"),
        (0x20, "SwThermalSlowdown"),
        (0x40, "HwThermalSlowdown"),
        (0x80, "HwPowerBrakeSlowdown"),
    ]:
        assert bit & e.INVALIDATING_MASK
        reason = e.throttle_reason({name: 0.02, "SwPowerCap": 0.9})
        assert reason is not None and name in reason and "SwPowerCap" not in reason
    assert not 0x4 & e.INVALIDATING_MASK
    assert e.throttle_reason({"SwPowerCap": 0.92}) is None


def _power(clock: float, cap: float | None) -> PowerMetrics:
    throttle = {} if not cap else {"SwPowerCap": cap}
    return PowerMetrics(available=True, sm_clock_mhz=ClockStats(mean=clock, min=clock), throttle=throttle)


def test_conditions_differ_past_either_stated_gap() -> None:
    assert e.conditions_differ(_power(1948, 0.40), _power(1926, 0.41)) is None  # 1.1%, 1 point
    clocks = e.conditions_differ(_power(1860, 0.41), _power(1948, 0.40))  # -4.5%
    assert clocks is not None and "1860 vs 1948 MHz" in clocks and "SwPowerCap" not in clocks
    caps = e.conditions_differ(_power(1975, 0.14), _power(1980, None))  # 14 points: under the gap
    assert caps is None
    caps = e.conditions_differ(_power(1975, 0.40), _power(1980, None))
    assert caps is not None and "SwPowerCap in 40% vs 0%" in caps and "MHz" not in caps
    # just past the limits, and unmeasured sides never flag
    assert e.conditions_differ(_power(1000 * (1 + e.MAX_SM_CLOCK_GAP) + 1, 0), _power(1000, 0)) is not None
    assert e.conditions_differ(_power(1000 * (1 + e.MAX_SM_CLOCK_GAP) - 1, 0), _power(1000, 0)) is None
    assert e.conditions_differ(_power(1000, 0.9), PowerMetrics(available=False, reason="no NVML")) is None
    assert e.conditions_differ(None, _power(1000, 0.9)) is None


def test_clock_stats_pool_gpus_inside_window() -> None:
    t = [0, S, 2 * S]
    clocks = [[1980, 1700, 1980], [1980, 1980, 1500]]
    assert e.clock_stats_mhz(t, clocks, S, 2 * S) == {
        "mean": pytest.approx((1700 + 1980 + 1980 + 1500) / 4),
        "min": 1500,
    }
    assert e.clock_stats_mhz(t, clocks, 5 * S, 6 * S) == {"mean": None, "min": None}
