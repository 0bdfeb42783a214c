"""Node runtimes: where the processes of one multi-node server run, and how they are all removed.

A node is one place a share of the server runs: a process group on this host (``local``), a
container (``docker_nodes``), or a host reached over SSH (``ssh_nodes``). Every node runtime gives
the cluster the same four things: ``spawn`` a long-running process with its log streamed into a
file, ``run`` a short command and read its output (fingerprints, ``ray status``), liveness of what
it spawned, and ``close``: everything the node started is gone when it returns.

Every process a node starts carries ``BYOG_NODE=<marker>`` in its environment, a value unique to
that node of that start. Processes that leave their parent's process group (Ray's daemons
``setsid``) still inherit it, so ``close`` finds them by it and nothing else: no process byog
did not start is ever signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from typing import IO, Any, Protocol

import psutil

from byog.core.errors import EnvironmentProblem
from byog.core.settings import NODE_MARKER_ENV
from byog.images.vllm_entry import installed_vllm_version
from byog.runtimes.local import die_with_parent, kill_process_group

NODE_PROBE = "byog.runtimes.node_probe"
RUN_TIMEOUT_S = 120.0
STOP_GRACE_S = 20.0


class NodeProc(Protocol):
    label: str

    def alive(self) -> bool: ...

    def stop(self, grace_s: float = ...) -> None:
        """SIGTERM first, and ``grace_s`` for an orderly exit (0 after a node died: nothing to save)."""
        ...

    def record(self) -> dict[str, Any]: ...


class Node(Protocol):
    rank: int
    address: str  # where the other nodes (and clients, for the head) reach this node
    marker: str

    def spawn(self, label: str, argv: list[str], env: dict[str, str], log_path: Path) -> NodeProc: ...

    def run(
        self, argv: list[str], env: dict[str, str] | None = None, timeout_s: float = RUN_TIMEOUT_S
    ) -> tuple[int, str]: ...

    def close(self) -> None: ...

    def record(self) -> dict[str, Any]: ...


class NodeRuntime(Protocol):
    kind: str
    # How long a node's end may take to reach byog after the node is gone: a failed point waits
    # that long for it, so that the point names the node rather than the API server's errors.
    death_lag_s: float

    def open(self, rank: int, host: str | None, gpus: list[int], marker: str) -> Node: ...


def gpu_env(gpus: list[int]) -> dict[str, str]:
    """The node's GPUs as the environment names them (nothing for a node without GPUs)."""
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus)} if gpus else {}


def node_env(step_env: dict[str, str], marker: str, gpus: list[int]) -> dict[str, str]:
    """What every process on a node gets on top of the node's environment."""
    return {**step_env, NODE_MARKER_ENV: marker, **gpu_env(gpus)}


def probe_node(node: Node, python: str, env: dict[str, str]) -> dict[str, Any]:
    """The node's fingerprint (host, Python, packages, GPUs), as that node itself reports it."""
    code, out = node.run([python, "-m", NODE_PROBE], env)
    if code != 0:
        return {"error": f"exit {code}: {out.strip()[-300:]}"}
    try:
        found = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        found = None
    if not isinstance(found, dict):
        return {"error": f"unreadable probe output: {out.strip()[-300:]}"}
    return found


def marked_processes(marker: str) -> list[psutil.Process]:
    """Processes on this host whose environment carries ``BYOG_NODE=<marker>``."""
    found = []
    needle = f"{NODE_MARKER_ENV}={marker}"
    for proc in psutil.process_iter(["pid"]):
        try:
            with open(f"/proc/{proc.pid}/environ", "rb") as handle:
                if needle.encode() in handle.read().split(b"\0"):
                    found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def kill_marked(marker: str, grace_s: float = 5.0) -> list[int]:
    """SIGTERM, then SIGKILL, every process carrying the marker; returns the pids found."""
    procs = [p for p in marked_processes(marker) if p.pid != os.getpid()]
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGTERM)
    _, left = psutil.wait_procs(procs, timeout=grace_s)
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(left, timeout=grace_s)
    return [p.pid for p in procs]


# Sweeps repeat, a short pause apart, until a pass finds nothing: a parent killed late in a pass may
# have forked after its children were found.
SWEEP_PASSES = 10
SWEEP_PAUSE_S = 0.2


def sweep_marked(marker: str) -> list[int]:
    """``kill_marked`` pass after pass until one finds nothing (the node is clear: ``[]``); else what
    the last pass found."""
    found = kill_marked(marker)
    for _ in range(SWEEP_PASSES - 1):
        if not found:
            return []
        time.sleep(SWEEP_PAUSE_S)
        found = kill_marked(marker, grace_s=0.2)  # born since the first pass: no shutdown to wait for
    return found


def node_not_clear(rank: int, where: str, why: str, marker: str) -> EnvironmentProblem:
    """A node close could not show that nothing of the node is left: fail closed, saying where to look."""
    return EnvironmentProblem(
        f"node {rank} ({where}): byog cannot say its processes are gone ({why});"
        f" look there for processes whose environment holds {NODE_MARKER_ENV}={marker}"
    )


class LocalProc:
    """A process group on this host, started in its own session, dying with byog (PDEATHSIG)."""

    def __init__(self, label: str, popen: subprocess.Popen[bytes], log: IO[bytes]) -> None:
        self.label = label
        self.popen = popen
        self._log = log

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM to the leader (vLLM's API server stops its engine in order), then the group."""
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(signal.SIGTERM)
                self.popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
        kill_process_group(self.popen, grace_s=0.0)  # what is left of the group: SIGTERM, then SIGKILL
        self.popen.wait()
        self._log.close()

    def record(self) -> dict[str, Any]:
        return {"pid": self.popen.pid, "returncode": self.popen.poll()}


class LocalNode:
    """A node on this host: its processes share this machine, its GPUs are CUDA_VISIBLE_DEVICES."""

    def __init__(self, rank: int, address: str, gpus: list[int], marker: str) -> None:
        self.rank = rank
        self.address = address
        self.gpus = gpus
        self.marker = marker
        self.procs: list[LocalProc] = []

    def spawn(self, label: str, argv: list[str], env: dict[str, str], log_path: Path) -> LocalProc:
        log = log_path.open("ab")
        popen = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **node_env(env, self.marker, self.gpus)},
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        proc = LocalProc(label, popen, log)
        self.procs.append(proc)
        return proc

    def run(
        self, argv: list[str], env: dict[str, str] | None = None, timeout_s: float = RUN_TIMEOUT_S
    ) -> tuple[int, str]:
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env={**os.environ, **node_env(env or {}, self.marker, self.gpus)},
            )
        except subprocess.TimeoutExpired:
            return 124, f"timed out after {timeout_s:.0f} s"
        return done.returncode, done.stdout + done.stderr

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        self.procs = []
        left = sweep_marked(self.marker)  # what left the process groups (Ray's daemons)
        if left:
            passes = f"still there after {SWEEP_PASSES} passes: {' '.join(str(pid) for pid in left)}"
            raise node_not_clear(self.rank, self.address, passes, self.marker)

    def record(self) -> dict[str, Any]:
        return {"runtime": "local", "address": self.address, "gpus": self.gpus, "marker": self.marker}


class LocalNodes:
    kind = "local"
    death_lag_s = 0.0  # a child process's end is seen by the next poll

    @property
    def cpu_build(self) -> bool:
        """The nodes run this machine's vLLM: the CPU build takes no CUDA_VISIBLE_DEVICES."""
        try:
            return installed_vllm_version().endswith("+cpu")
        except PackageNotFoundError:
            return False

    def open(self, rank: int, host: str | None, gpus: list[int], marker: str) -> LocalNode:
        return LocalNode(rank, host or "127.0.0.1", gpus, marker)


def wait_dead(procs: list[NodeProc], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(p.alive() for p in procs):
            return True
        time.sleep(0.2)
    return not any(p.alive() for p in procs)
