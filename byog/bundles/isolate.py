"""Run verify's content checks in a child process with memory and CPU limits.

Why: the bounds of ``byog.bundles.bounds`` stop every hostile input we know of; this stops the
ones we do not. The child is a ``fork`` of verify (so it starts in milliseconds, with every module
already imported) that sets, before it reads a byte of content:
- ``RLIMIT_AS``: its address space may grow by at most ``memory_bytes`` beyond what it has once
  the heavy libraries are imported (a decompression or allocation bomb ends in MemoryError, not
  in the maintainer's swap); pyarrow uses the system allocator and one thread, whose address
  space is close to what they use (jemalloc reserves ~1.3 GB it never touches);
- ``RLIMIT_CPU``: ``cpu_s`` seconds of CPU (then SIGXCPU ends it); ``RLIMIT_CORE`` 0;
The parent waits at most ``wall_s`` seconds, then kills it. The child reports each finished
check as one JSON line on a pipe (at most ``max_output_bytes`` in all); if it dies, the parent
knows which check it died in, and says why in one line. The parent never parses bundle content.

Settings: ``BYOG_VERIFY_MEMORY_MB`` (default 640), ``BYOG_VERIFY_CPU_S`` (60),
``BYOG_VERIFY_TIMEOUT_S`` (120). Where ``fork`` does not exist (Windows), the checks run in
process, without limits, and verify says so.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from byog.core.settings import VERIFY_CPU_S_ENV, VERIFY_MEMORY_MB_ENV, VERIFY_TIMEOUT_S_ENV

MiB = 1024 * 1024


@dataclass(frozen=True)
class ChildLimits:
    memory_bytes: int = 640 * MiB  # address space the child may add to what it inherits
    cpu_s: int = 60
    wall_s: float = 120.0
    max_output_bytes: int = 4 * MiB

    @classmethod
    def from_env(cls) -> ChildLimits:
        def number(name: str, default: float) -> float:
            raw = os.environ.get(name, "").strip()
            try:
                return float(raw) if raw else default
            except ValueError:
                return default

        base = cls()
        return cls(
            memory_bytes=int(number(VERIFY_MEMORY_MB_ENV, base.memory_bytes / MiB) * MiB),
            cpu_s=int(number(VERIFY_CPU_S_ENV, base.cpu_s)),
            wall_s=number(VERIFY_TIMEOUT_S_ENV, base.wall_s),
        )


@dataclass
class ChildOutcome:
    events: list[dict[str, Any]]  # what the child emitted, in order
    stopped: str | None  # None: it finished; else why it did not, as a sentence
    isolated: bool = True  # False where fork does not exist (the work ran in this process)


Emit = Callable[[dict[str, Any]], None]


def _address_space_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _quiet_heavy_libraries(preload: tuple[str, ...]) -> None:
    """Before the limit: one thread and the system allocator for pyarrow and BLAS, then import
    what the work will need, so the address space they map is part of the baseline, not of the
    budget. (pyarrow's default jemalloc pool reserves ~1.3 GB of address space it never touches,
    and every thread ~70 MB: under RLIMIT_AS both would fail legitimate work.)"""
    os.environ["OMP_NUM_THREADS"] = "1"  # read by pyarrow and BLAS when first imported here
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    for name in preload:
        importlib.import_module(name)
    if "pyarrow" in sys.modules:
        import pyarrow

        pyarrow.set_memory_pool(pyarrow.system_memory_pool())
        pyarrow.set_cpu_count(1)
        pyarrow.set_io_thread_count(1)


def _apply_limits(limits: ChildLimits) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    want = limits.cpu_s if cpu_hard == resource.RLIM_INFINITY else min(limits.cpu_s, cpu_hard)
    resource.setrlimit(resource.RLIMIT_CPU, (want, want + 5 if cpu_hard == resource.RLIM_INFINITY else cpu_hard))
    inherited = _address_space_bytes()
    if inherited:  # Linux: the only platform that enforces RLIMIT_AS
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        cap = inherited + limits.memory_bytes
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _child(work: Callable[[Emit], None], limits: ChildLimits, write_fd: int, preload: tuple[str, ...]) -> None:
    """Never returns: runs ``work`` and leaves with os._exit (no atexit, no parent buffers flushed)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        out = os.fdopen(write_fd, "wb", buffering=0)

        def emit(event: dict[str, Any]) -> None:
            out.write(json.dumps(event, allow_nan=False, ensure_ascii=True).encode("ascii") + b"\n")

        _quiet_heavy_libraries(preload)
        _apply_limits(limits)
        work(emit)
        out.close()
    except MemoryError:
        code = 71
    except BaseException:  # the parent reports the exit status
        code = 70
    finally:
        os._exit(code)


def _why(status: int, limits: ChildLimits, killed_for_time: bool) -> str | None:
    if killed_for_time:
        return f"stopped after {limits.wall_s:g} s, the time verify allows the content checks"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            return f"stopped at the CPU limit of {limits.cpu_s} s"
        if number == signal.SIGKILL:
            return "killed (the CPU limit's hard stop, or the system ran out of memory)"
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
        return f"crashed with {name} (at the memory limit of {limits.memory_bytes // MiB} MiB?)"
    code = os.WEXITSTATUS(status)
    if code == 0:
        return None
    if code == 71:
        return f"ran out of memory (limit {limits.memory_bytes // MiB} MiB)"
    return f"ended with exit status {code}"


def run_isolated(
    work: Callable[[Emit], None], limits: ChildLimits | None = None, preload: tuple[str, ...] = ()
) -> ChildOutcome:
    """Run ``work(emit)`` in a limited child; return what it emitted and whether it finished.

    ``preload``: modules the child imports before its limits apply (heavy libraries the work uses).
    """
    limits = limits or ChildLimits.from_env()
    if not hasattr(os, "fork"):
        events: list[dict[str, Any]] = []
        work(events.append)
        return ChildOutcome(events=events, stopped=None, isolated=False)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child; its coverage is its output)
        os.close(read_fd)
        _child(work, limits, write_fd, preload)
    os.close(write_fd)
    buffer = bytearray()
    deadline = time.monotonic() + limits.wall_s
    killed_for_time = too_much = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                killed_for_time = True
                break
            ready, _, _ = select.select([read_fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            buffer += chunk
            if len(buffer) > limits.max_output_bytes:
                os.kill(pid, signal.SIGKILL)
                too_much = True
                break
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    events = []
    for line in bytes(buffer).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            break  # a line cut short by the child's death
        if isinstance(event, dict):
            events.append(event)
    stopped = "wrote more output than verify reads" if too_much else _why(status, limits, killed_for_time)
    return ChildOutcome(events=events, stopped=stopped)
