"""vLLM's sleep mode: what a server needs to swap in and out of the GPU, and whether it can.

A server started with ``--enable-sleep-mode`` and ``VLLM_SERVER_DEV_MODE=1`` serves
``POST /sleep?level=1`` (weights copied to host memory, KV cache dropped; answers
``{"status": "sleeping", "level": 1}``), ``POST /wake_up`` (``{"status": "awake", ...}``) and
``GET /is_sleeping`` (``{"is_sleeping": bool}``); without dev mode those routes are 404.
vLLM refuses ``--enable-sleep-mode`` at start-up where ``current_platform.is_sleep_mode_available()``
is False (CUDA, ROCm and XPU only: its CPU build's ``CpuPlatform`` is not), so byog asks that
question of the vLLM it would run, before starting anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

from byog.core.errors import ByogError
from byog.core.safe_text import one_line
from byog.runtimes.launch import DEV_MODE_ENV
from byog.schemas.plan import LaunchedConfig

Launched = TypeVar("Launched", bound=LaunchedConfig)

SLEEP_ARGS = ("--enable-sleep-mode",)
SLEEP_LEVEL = 1  # weights kept in host memory: a wake-up copies them back instead of reloading
SWAP_TIMEOUT_S = 600.0
SWAP_POLL_S = 0.02  # between /is_sleeping reads while a swap finishes

# Runs in the Python that would serve: vLLM's own answer, without starting a server.
_PLATFORM_PROBE = (
    "import json; from vllm.platforms import current_platform as p; "
    "print(json.dumps({'platform': type(p).__name__, 'sleep_mode': bool(p.is_sleep_mode_available())}))"
)


def with_sleep_mode(config: Launched) -> Launched:
    """The server config as an interleaved pair launches it: sleep mode on, dev endpoints served."""
    args = list(config.args) + [a for a in SLEEP_ARGS if a not in config.args]
    return config.model_copy(update={"args": args, "env": {**config.env, **DEV_MODE_ENV}})


@dataclass(frozen=True)
class PlatformFacts:
    """What vLLM says of the platform it runs on."""

    platform: str  # vLLM's platform class, e.g. CudaPlatform, CpuPlatform
    sleep_mode: bool  # current_platform.is_sleep_mode_available()


def local_platform_facts(python: str = sys.executable, timeout_s: float = 180.0) -> PlatformFacts | None:
    """Ask the local vLLM (in a child: importing vLLM loads torch) what its platform is; None when it cannot say."""
    try:
        done = subprocess.run(
            [python, "-c", _PLATFORM_PROBE], capture_output=True, text=True, timeout=timeout_s, check=False
        )
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    return PlatformFacts(platform=str(found["platform"]), sleep_mode=bool(found["sleep_mode"])) if found else None


def platform_refusal(server: str, facts: PlatformFacts | None) -> str | None:
    """One sentence when ``server`` cannot sleep on this platform, else None."""
    if facts is None or facts.sleep_mode:
        return None
    return (
        f"server '{server}' cannot be interleaved: vLLM here runs on {facts.platform}, which has no sleep mode "
        "(vLLM offers it on CUDA, ROCm and XPU only); run the pair sequentially (interleave: false)"
    )


def weights_bytes(model_path: str) -> int | None:
    """Bytes of the checkpoint's weight files in a local model folder; None for a hub id or an empty folder."""
    folder = Path(model_path)
    if not folder.is_dir():
        return None
    sizes = [p.stat().st_size for pattern in ("*.safetensors", "*.bin", "*.pt") for p in folder.glob(pattern)]
    return sum(sizes) or None


def available_host_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The kernel's MemAvailable (what can be allocated without swapping); None where it is not reported."""
    try:
        for line in meminfo.read_text(encoding="utf-8").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def host_memory_refusal(pair: tuple[str, str], weights: int | None, available: int | None) -> str | None:
    """One sentence when both servers' weights (each held in host memory while it sleeps) do not fit."""
    if weights is None or available is None or 2 * weights <= available:
        return None
    return (
        f"pair {pair[0]} vs {pair[1]} cannot be interleaved: asleep, each server keeps its weights in host memory "
        f"and both need {2 * weights / 2**30:.1f} GiB but this host has {available / 2**30:.1f} GiB available"
    )


class SleepModeAbsent(ByogError):
    """The server does not serve vLLM's sleep endpoints (no dev mode, or a build without them)."""


@dataclass
class SleepControl:
    """The three dev endpoints of one server; each call returns its seconds."""

    name: str
    base_url: str

    def is_sleeping(self) -> bool:
        try:
            response = httpx.get(f"{self.base_url}/is_sleeping", timeout=30.0)
        except httpx.HTTPError as err:
            raise ByogError(f"server '{self.name}': GET /is_sleeping failed: {err}") from None
        if response.status_code == 404:
            raise SleepModeAbsent(
                f"server '{self.name}' does not serve /is_sleeping: it needs --enable-sleep-mode and "
                "VLLM_SERVER_DEV_MODE=1 on a platform with sleep mode"
            )
        try:
            return bool(response.json()["is_sleeping"])
        except (ValueError, KeyError, TypeError):
            raise ByogError(
                f"server '{self.name}': GET /is_sleeping answered {response.status_code} {one_line(response.text, 200)}"
            ) from None

    def _call(self, path: str, body: dict[str, object] | None = None) -> None:
        """POST one dev endpoint; a 404 is a server without sleep mode, any other non-200 an error."""
        try:
            response = httpx.post(f"{self.base_url}{path}", json=body, timeout=SWAP_TIMEOUT_S)
        except httpx.HTTPError as err:
            raise ByogError(f"server '{self.name}': POST {path} failed: {err}") from None
        if response.status_code == 404:
            raise SleepModeAbsent(f"server '{self.name}' does not serve {path.split('?')[0]} (no sleep mode)")
        if response.status_code != 200:
            raise ByogError(
                f"server '{self.name}': POST {path} answered {response.status_code} {one_line(response.text, 200)}"
            )

    def _post(self, path: str, sleeping: bool, then: tuple[tuple[str, dict[str, object] | None], ...] = ()) -> float:
        """POST a swap and wait until /is_sleeping says it is done: the seconds until then.

        The answer's body is not read: vLLM 0.24 answers an empty 200 (its router notes the command may
        not have finished when it returns) and 0.32 a JSON status; /is_sleeping is the same in both."""
        t0 = time.perf_counter()
        self._call(path)
        for step, body in then:
            self._call(step, body)
        while self.is_sleeping() != sleeping:
            if time.perf_counter() - t0 > SWAP_TIMEOUT_S:
                state = "asleep" if sleeping else "awake"
                raise ByogError(f"server '{self.name}' was not {state} {SWAP_TIMEOUT_S:.0f} s after POST {path}")
            time.sleep(SWAP_POLL_S)
        return time.perf_counter() - t0

    def sleep(self, level: int = SLEEP_LEVEL) -> float:
        return self._post(f"/sleep?level={level}", sleeping=True)

    def wake_up(self, level: int = SLEEP_LEVEL) -> float:
        """Wake; after a level-2 sleep (weights discarded) vLLM's documented route: weights' memory back,
        ``reload_weights`` from the checkpoint, then the KV cache. A bare /wake_up after level 2 serves
        garbage with HTTP 200 (vLLM #29341; the H200 probe: token id 0 repeated)."""
        if level < 2:
            return self._post("/wake_up", sleeping=False)
        reload: tuple[tuple[str, dict[str, object] | None], ...] = (
            ("/collective_rpc", {"method": "reload_weights"}),
            ("/wake_up?tags=kv_cache", None),
        )
        return self._post("/wake_up?tags=weights", sleeping=False, then=reload)


def process_rss_bytes(pid: int | None) -> int | None:
    """Resident host memory of a process and its children (Linux /proc); None where it cannot be read."""
    if pid is None:
        return None
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(entry.name) != pid and os.getpgid(int(entry.name)) != pid:
                continue
            total += int(stat[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    return total or None


def gpu_used_bytes() -> int | None:
    """GPU memory in use over every GPU NVML sees (an interleaved pair shares its GPUs); None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no driver, no bindings: a CPU host
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        return sum(int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).used) for i in range(count))
    except Exception:
        return None
    finally:
        pynvml.nvmlShutdown()
