"""The `local` runtime: `vllm serve` as a child process in its own process group.

The child gets its own session so Ctrl-C in the terminal reaches byog, not vLLM; byog then
stops the whole group (API server and engine processes) in ``stop``. If byog itself is killed
the kernel sends the child SIGTERM (PR_SET_PDEATHSIG), so no server outlives its client.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from typing import IO, Any

from byog.core.errors import ByogError
from byog.images.vllm_entry import installed_vllm_version
from byog.plans.tiers import PLACEHOLDER
from byog.runtimes.identity import local_identity
from byog.runtimes.interpreter import local_vllm, vllm_cli
from byog.runtimes.launch import local_vllm_argv, redact_env, server_env
from byog.runtimes.record import (
    endpoint_after_start,
    listen_of,
    local_gpus,
    probe_server,
    resolved_config,
    tail_file,
    utc_now,
    wait_for_health,
    write_server_record,
)
from byog.runtimes.registry import PlannedLaunch, port_placeholder, register_runtime
from byog.schemas.plan import LaunchedConfig, LocalConfig, ServerConfig
from byog.schemas.server import SERVER_START_MARKER, Endpoint, PreparedModel, ServerRecord

HOST = "127.0.0.1"
STOP_GRACE_S = 20.0
_PR_SET_PDEATHSIG = 1


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def cpu_vllm_installed() -> bool:
    """Whether this Python's vLLM is the CPU build (the local runtime then sets its CPU defaults)."""
    try:
        return installed_vllm_version().endswith("+cpu")
    except PackageNotFoundError:
        return False


def die_with_parent() -> None:
    """Runs in the child between fork and exec.

    Caveat: Linux delivers the death signal when the *thread* that forked exits, not the
    process; launch servers from a thread that lives as long as they should (the main one).
    """
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def _wait_group_gone(leader: subprocess.Popen[bytes], wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        leader.poll()  # reap the leader: a zombie still counts as a member of its group
        if not group_alive(leader.pid):
            return True
        time.sleep(0.2)
    leader.poll()
    return not group_alive(leader.pid)


def kill_process_group(leader: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    """Stop a server and everything it spawned.

    SIGTERM goes to the leader first so vLLM's API server shuts its engine down in order
    (signalling the whole group at once kills the engine under it); then the group gets
    SIGTERM and finally SIGKILL, so nothing survives. A leader that already died (a crash, a
    kill -9) can shut nothing down: its engine gets the group's SIGTERM at once, not after
    the leader's grace.
    """
    pgid = leader.pid  # the leader of its own session: pid == pgid
    leader_grace_s = grace_s if leader.poll() is None else 0.0  # grace 0: the group's SIGTERM at once
    steps: tuple[tuple[Callable[[], None], float], ...] = (
        (lambda: leader.send_signal(signal.SIGTERM), leader_grace_s),
        (lambda: os.killpg(pgid, signal.SIGTERM), 5.0),
        (lambda: os.killpg(pgid, signal.SIGKILL), 5.0),
    )
    for send, wait_s in steps:
        with contextlib.suppress(ProcessLookupError):
            send()
        if _wait_group_gone(leader, wait_s):
            return


class LocalServer:
    """A running local vLLM; ``restart`` relaunches it on the same port with the same argv."""

    def __init__(self, name: str, config: LocalConfig, model: PreparedModel, server_dir: Path) -> None:
        self.name = name
        self.config = config
        self.model = model
        self.server_dir = server_dir
        self.log_path = server_dir / "server.log"
        self.record_path = server_dir / "server.json"
        self.port = free_port()
        vllm = local_vllm(name, config)
        self.argv = local_vllm_argv(vllm.cli, config, model, HOST, self.port)
        self.env = server_env(config, cpu_build=vllm.cpu_build)
        self.base_url = f"http://{HOST}:{self.port}"
        self.endpoint = Endpoint(base_url=self.base_url, model=model.served_name, tokenizer=model.tokenizer)
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.starts: list[dict[str, Any]] = []
        self.identity: dict[str, Any] | None = None

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> LocalServer:
        self.server_dir.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._log.write(f"\n{SERVER_START_MARKER} '{self.name}' at {utc_now()}: {' '.join(self.argv)}\n".encode())
        self._log.flush()
        started_at = utc_now()
        self._proc = subprocess.Popen(
            self.argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env},
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        try:
            ready_s = wait_for_health(
                self.base_url,
                name=self.name,
                alive=self.alive,
                log_tail=self.log_tail,
                timeout_s=self.config.startup_timeout_s,
                log_path=self.log_path,
            )
        except BaseException:
            # Nothing served yet, so nothing to drain: the whole group gets SIGTERM at once instead of the
            # leader's grace first (a Ctrl-C during a CPU compile otherwise waited up to 20 s for it).
            self.stop(grace_s=0.0)
            raise
        probe = probe_server(self.base_url)
        self.endpoint = endpoint_after_start(self.base_url, self.model, self.config, self.argv, probe)
        self.starts.append({"started_at": started_at, "ready_after_s": round(ready_s, 3), "pid": self._proc.pid})
        if self.identity is None:  # a restart runs the same interpreter on the same files
            self.identity = local_identity(self.argv[0], self.model)
        write_server_record(
            self.record_path,
            ServerRecord(
                name=self.name,
                runtime="local",
                argv=self.argv,
                env=redact_env(self.env),
                base_url=self.base_url,
                model=self.model.served_name,
                model_path=self.model.path,
                tensor_parallel_size=self.config.tensor_parallel_size,
                max_model_len=self.endpoint.max_model_len,
                starts=self.starts,
                identity=self.identity,
                listen=listen_of(self.argv, self.env),
                resolved=resolved_config(self.base_url, self.log_path),
                hardware=local_gpus(self.env),
                **probe,
            ),
        )
        return self

    @property
    def pid(self) -> int | None:
        """The server's process (the leader of its process group), while it runs."""
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        if self._log:
            self._log.flush()
        return tail_file(self.log_path, lines)

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        if self._proc is not None:
            kill_process_group(self._proc, grace_s)
            self._proc.wait()
            self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@register_runtime("local")
class LocalRuntime:
    def planned(self, name: str, config: ServerConfig, model: PreparedModel, *, cpu_build: bool) -> PlannedLaunch:
        # a named interpreter's install says which build it is (byog plan checks it first)
        if isinstance(config, LaunchedConfig) and config.python and PLACEHOLDER.search(config.python):
            cli = vllm_cli(config.python, None)  # still to set: planned as written, `byog plan` lists it to set
        elif isinstance(config, LaunchedConfig) and config.python:
            vllm = local_vllm(name, config)
            cli, cpu_build = vllm.cli, vllm.cpu_build
        else:  # byog's own: planned on a machine that need not have vLLM
            cli = vllm_cli(sys.executable, None)
        argv = port_placeholder(local_vllm_argv(cli, config, model, HOST, 0))
        return PlannedLaunch.of_argv(argv, redact_env(server_env(config, cpu_build=cpu_build)))

    def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> LocalServer:
        if not isinstance(config, LocalConfig):
            raise ByogError(f"server '{name}' asks for the '{config.runtime}' runtime, not 'local'")
        return LocalServer(name, config, model, server_dir).start()
