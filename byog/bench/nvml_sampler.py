"""Power, energy and clocks through NVML, sampled in a thread during each bench point.

Why sampled during the point (not read once at start): energy per token needs energy over the
decode window, and a point during which the clocks throttled must be flagged; both happen while
requests are in flight. Each sample is stamped with ``time.perf_counter_ns`` (the clock of the
request rows), so ``byog.analysis.energy`` can cut the samples at the decode window.

Per GPU and sample: power (``nvmlDeviceGetPowerUsage``, mW), the energy counter
(``nvmlDeviceGetTotalEnergyConsumption``, mJ since the driver loaded) where the GPU has one, SM
and memory clocks (``nvmlDeviceGetClockInfo``), the clocks-event (throttle) reasons bitmask and
the temperature. Energy uses the counter when every sampled GPU has it, else integrated power;
``energy_source`` says which. Where NVML is absent (no bindings, no driver: the CPU default) the
trace is ``available: false`` with the reason and holds no numbers at all, never zeros.

NVML counts GPUs in PCI bus order; ``gpu_indices`` are NVML indices (``CUDA_VISIBLE_DEVICES``
means the same GPUs only under ``CUDA_DEVICE_ORDER=PCI_BUS_ID``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from byog.schemas.bench import PowerTrace

DEFAULT_INTERVAL_S = 0.1  # 10 Hz: the H100/H200 power reading itself is averaged over tens of ms


def unavailable(reason: str) -> PowerTrace:
    return PowerTrace(available=False, reason=reason)


def _load_nvml() -> tuple[Any | None, str | None]:
    try:
        import pynvml  # nvidia-ml-py (the `nvml` extra)
    except ImportError:
        return None, "nvidia-ml-py is not installed (pip install 'byog[nvml]')"
    try:
        pynvml.nvmlInit()
    except Exception as err:  # NVMLError subclasses vary by driver: any means "no NVIDIA GPU here"
        return None, f"NVML did not initialise: {err}"
    return pynvml, None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class PowerSampler:
    """Samples every ``interval_s`` in a daemon thread between ``start()`` and ``stop()``.

    ``nvml``: the pynvml module (tests pass a fake); ``None`` loads and initialises the real one.
    ``gpu_indices``: NVML indices of the server's GPUs; ``None`` = every GPU NVML sees.
    """

    _FIELDS = ("t_ns", "power_w", "energy_mj", "sm_clock_mhz", "mem_clock_mhz", "clock_event_reasons", "temperature_c")

    def __init__(
        self, gpu_indices: Sequence[int] | None = None, interval_s: float = DEFAULT_INTERVAL_S, nvml: Any | None = None
    ) -> None:
        self.interval_s = interval_s
        self._want = list(gpu_indices) if gpu_indices is not None else None
        self._nvml: Any
        self._reason: str | None
        self._nvml, self._reason = (nvml, None) if nvml is not None else _load_nvml()
        self._handles: list[Any] = []
        self._header: dict[str, Any] | None = None
        self._samples: dict[str, list[Any]] = {name: [] for name in self._FIELDS}
        self._errors: list[str] = []
        self._counter = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        if self._nvml is not None:
            self._open()

    def _open(self) -> None:
        nv = self._nvml
        try:
            count = nv.nvmlDeviceGetCount()
            indices = self._want if self._want is not None else list(range(count))
            missing = [i for i in indices if not 0 <= i < count]
            if missing:
                raise ValueError(f"GPU indices {missing} are not among NVML's {count} GPUs")
            self._handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in indices]
            if not self._handles:
                raise ValueError("NVML sees no GPU")
            self._counter = all(self._has_counter(h) for h in self._handles)
            self._header = dict(
                available=True,
                gpu_indices=indices,
                gpu_names=[_text(nv.nvmlDeviceGetName(h)) for h in self._handles],
                interval_s=self.interval_s,
                energy_source="counter" if self._counter else "integrated-power",
                power_limit_w=[nv.nvmlDeviceGetPowerManagementLimit(h) / 1000.0 for h in self._handles],
            )
        except Exception as err:
            self._nvml, self._reason = None, f"NVML could not read the GPUs: {err}"

    def _has_counter(self, handle: Any) -> bool:
        try:
            self._nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            return True
        except Exception:  # NVMLError_NotSupported before Volta
            return False

    def _reasons(self, handle: Any) -> int:
        nv = self._nvml
        read = (
            getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        return int(read(handle))

    def sample(self) -> None:
        """Read every GPU once and append one sample (a failed read drops the sample and is recorded)."""
        if self._header is None:
            return
        nv, handles = self._nvml, self._handles
        t0 = time.perf_counter_ns()
        try:
            row: dict[str, Any] = {
                "power_w": [nv.nvmlDeviceGetPowerUsage(h) / 1000.0 for h in handles],
                "energy_mj": [float(nv.nvmlDeviceGetTotalEnergyConsumption(h)) for h in handles]
                if self._counter
                else None,
                "sm_clock_mhz": [int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)) for h in handles],
                "mem_clock_mhz": [int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)) for h in handles],
                "clock_event_reasons": [self._reasons(h) for h in handles],
                "temperature_c": [int(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)) for h in handles],
            }
        except Exception as err:
            with self._lock:
                if len(self._errors) < 20:
                    self._errors.append(f"{type(err).__name__}: {err}")
            return
        row["t_ns"] = (t0 + time.perf_counter_ns()) // 2
        with self._lock:
            for name in self._FIELDS:
                if row[name] is not None:
                    self._samples[name].append(row[name])

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def start(self) -> PowerSampler:
        """Take a first sample now, then sample in the background."""
        if self._header is not None:
            self.sample()
            self._thread = threading.Thread(target=self._run, name="byog-nvml-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> PowerTrace:
        """Stop, take a last sample (so the samples bracket the point) and return the trace."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self.sample()
        if self._header is None:
            return unavailable(self._reason or "NVML is not available")
        with self._lock:
            samples: dict[str, list[Any] | None] = {name: list(values) for name, values in self._samples.items()}
            if not self._counter:
                samples["energy_mj"] = None
            return PowerTrace(**self._header, **samples, errors=list(self._errors))

    def __enter__(self) -> PowerSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
