"""The NVML sampler against a fake NVML module; on this machine (no NVIDIA driver) it says why it has nothing."""

from __future__ import annotations

from typing import Any

import pytest

from byog.analysis import energy as e
from byog.bench.nvml_sampler import PowerSampler
from byog.schemas.bench import PowerTrace


class FakeNvml:
    """The pynvml calls the sampler makes, for two GPUs; GPU energy counters advance 300 mJ per read."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, energy: bool = True, fail_power_after: int | None = None) -> None:
        self.energy = energy
        self.reads = {0: 0, 1: 0}
        self.power_reads = 0
        self.fail_power_after = fail_power_after

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA H200"

    def nvmlDeviceGetPowerManagementLimit(self, h: int) -> int:
        return 700_000

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        if not self.energy:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        self.reads[h] += 1
        return 300 * self.reads[h]

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        self.power_reads += 1
        if self.fail_power_after is not None and self.power_reads > self.fail_power_after:
            raise RuntimeError("GPU is lost")
        return 250_000 + 1000 * h

    def nvmlDeviceGetClockInfo(self, h: int, which: int) -> int:
        return 1980 if which == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return 0x4 if h == 1 else 0x0

    def nvmlDeviceGetTemperature(self, h: int, which: int) -> int:
        return 45


def test_samples_bracket_the_point_with_the_counter() -> None:
    nv = FakeNvml()
    sampler = PowerSampler(interval_s=0.01, nvml=nv)
    sampler.start()
    sampler.sample()
    trace = sampler.stop()
    assert trace.available and trace.reason is None
    assert trace.energy_source == "counter"
    assert trace.gpu_indices == [0, 1] and trace.gpu_names == ["NVIDIA H200"] * 2
    assert trace.power_limit_w == [700.0, 700.0]
    n = len(trace.t_ns or [])
    assert n >= 3  # start, the explicit one, stop
    assert trace.t_ns == sorted(trace.t_ns or [])
    assert len(trace.power_w or []) == len(trace.energy_mj or []) == len(trace.clock_event_reasons or []) == n
    assert (trace.power_w or [])[0] == [250.0, 251.0]
    assert trace.per_gpu("sm_clock_mhz") == [[1980] * n, [1980] * n]
    # GPU 1 reports SwPowerCap in every sample: half the readings record the cap
    t = trace.t_ns or []
    shares = e.throttle_shares(t, trace.per_gpu("clock_event_reasons"), t[0], t[-1])
    assert shares == {"SwPowerCap": pytest.approx(0.5)}
    # the counter advanced 300 mJ per sample on each GPU
    energy = e.energy_j(t, trace.per_gpu("energy_mj"), "counter", t[0], t[-1])
    assert energy == pytest.approx(2 * 0.3 * (n - 1))
    PowerTrace.model_validate(trace.model_dump(mode="json"))


def test_without_an_energy_counter_power_is_integrated() -> None:
    trace = PowerSampler(gpu_indices=[1], interval_s=0.01, nvml=FakeNvml(energy=False)).start().stop()
    assert trace.energy_source == "integrated-power" and trace.energy_mj is None
    assert trace.gpu_indices == [1] and (trace.power_w or [])[0] == [251.0]


def test_a_failed_read_drops_the_sample_and_is_recorded() -> None:
    sampler = PowerSampler(gpu_indices=[0], interval_s=60, nvml=FakeNvml(fail_power_after=1))
    trace = sampler.start().stop()
    assert len(trace.t_ns or []) == 1
    assert trace.errors and "GPU is lost" in trace.errors[0]


def test_unknown_gpu_index_is_a_reason_not_a_crash() -> None:
    trace = PowerSampler(gpu_indices=[5], nvml=FakeNvml()).start().stop()
    assert not trace.available and "[5]" in (trace.reason or "")


def test_no_nvml_here_gives_a_reason_and_no_numbers() -> None:
    # This machine has no NVIDIA driver (and maybe no bindings): the trace says why, holds no zeros.
    trace = PowerSampler().start().stop()
    if trace.available:
        pytest.skip("this machine has NVML")
    assert trace.reason and ("nvidia-ml-py" in trace.reason or "NVML" in trace.reason)
    data: dict[str, Any] = trace.model_dump(mode="json")
    assert data["t_ns"] is None and data["power_w"] is None and data["energy_source"] is None
