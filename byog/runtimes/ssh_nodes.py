"""The ``ssh`` node runtime: plain processes on hosts reached over SSH (bare metal, Slurm-style).

Nothing but ``ssh`` and a POSIX shell on the nodes: byog runs ``ssh HOST sh -c WRAPPER ...`` per
process. The wrapper (``WRAPPER`` below) starts the command in a session of its own, prints that
session's process-group id as its first log line, and keeps byog's end of the SSH connection
(its stdin) open in a watcher: when byog dies, ssh dies with it (PR_SET_PDEATHSIG), sshd closes
the channel, the watcher reads EOF and kills the remote group. ``stop`` kills the group over a
second SSH connection: SIGTERM to the server first, then the group, then SIGKILL. ``close``
finally kills whatever on that host still carries the node's ``BYOG_NODE`` marker (Ray's
daemons leave the group), found through /proc on the node itself, pass after pass until one finds
nothing; where it cannot show that (the sweep fails, or something keeps starting marked
processes), it raises rather than return as if the node were clear.

The node's address (what other nodes and clients connect to) is the host part of the
destination; the destination is passed to ssh as written (``user@host``, ``ssh://user@host:port``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from byog.core.errors import UsageError
from byog.core.settings import NODE_MARKER_ENV
from byog.runtimes.local import die_with_parent, kill_process_group
from byog.runtimes.nodes import RUN_TIMEOUT_S, SWEEP_PASSES, SWEEP_PAUSE_S, node_env, node_not_clear

STOP_GRACE_S = 20.0
PGID_LINE = re.compile(rb"^byog-node pgid=(\d+)", re.MULTILINE)
PID_LINE = re.compile(rb"^byog-node pid=(\d+)", re.MULTILINE)
EXIT_LINE = re.compile(rb"^byog-node exit=(\d+)", re.MULTILINE)

# $1.. is `env K=V ... argv`. fd 3 keeps byog's stdin; the command itself gets /dev/null.
WRAPPER = r"""
exec 3<&0
echo "byog-node pgid=$$ host=$(hostname)"
"$@" </dev/null &
srv=$!
echo "byog-node pid=$srv"
( cat <&3 >/dev/null; trap '' TERM; kill -TERM -$$ 2>/dev/null; sleep 5; kill -KILL -$$ 2>/dev/null ) >/dev/null 2>&1 &
exec 3<&-
wait $srv
rc=$?
echo "byog-node exit=$rc"
trap '' TERM
kill -TERM -$$ 2>/dev/null
exit $rc
"""

# Kill what still carries the marker (run on the node; the arguments: the marker, nodes.SWEEP_PASSES
# and SWEEP_PAUSE_S), pass after pass, a pause apart, until one finds nothing: a parent killed late in
# a pass may have forked after its children's entries were read. Exit 1 naming what the last pass found.
SWEEP_TIMEOUT_S = 60  # SWEEP_PASSES passes of a /proc scan and a pause: seconds, unless the node hangs
SWEEP = r"""
for pass in $(seq 1 "$2"); do
  found=
  for d in /proc/[0-9]*; do
    if tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qx "$1"; then
      kill -KILL "${d#/proc/}" 2>/dev/null && found="$found ${d#/proc/}"
    fi
  done
  [ -z "$found" ] && exit 0
  sleep "$3"
done
echo "still there after $2 passes:$found"
exit 1
"""

BASE_OPTIONS = ["-o", "BatchMode=yes", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]


def ssh_address(destination: str) -> str:
    """The host an SSH destination names: ``user@host``, ``host``, ``ssh://user@host:port``."""
    rest = destination[len("ssh://") :] if destination.startswith("ssh://") else destination
    host = rest.rsplit("@", 1)[-1]
    if destination.startswith("ssh://"):
        host = host.split("/")[0]
        host = (
            host[1:].split("]")[0] if host.startswith("[") else host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        )
    if not host:
        raise UsageError(f"ssh host '{destination}' names no machine")
    return host


def parse_host(host: str) -> tuple[str, str]:
    """``ssh://user@host[:port]`` or ``user@host`` -> (docker base_url, node address)."""
    url = host if "://" in host else f"ssh://{host}"
    if not url.startswith("ssh://"):
        raise UsageError(f"docker host '{host}' must be an ssh:// address (docker over SSH), e.g. ssh://ubuntu@tray0")
    address = url[len("ssh://") :].rsplit("@", 1)[-1].split(":")[0].strip("/")
    if not address:
        raise UsageError(f"docker host '{host}' names no machine")
    return url, address


def remote_command(argv: list[str], env: dict[str, str]) -> str:
    """The one string ssh sends: the wrapper with ``env K=V ... argv`` as its arguments."""
    # Every process of the node carries its marker, setsid's own too (it forks when sshd made the
    # shell a group leader), so whatever runs for the node can be found by it.
    marker = [f"{NODE_MARKER_ENV}={env[NODE_MARKER_ENV]}"] if NODE_MARKER_ENV in env else []
    return shlex.join(
        [
            "env",
            *marker,
            "setsid",
            "-w",
            "sh",
            "-c",
            WRAPPER,
            "byog-node",
            "env",
            *[f"{k}={v}" for k, v in env.items()],
            *argv,
        ]
    )


class SshProc:
    def __init__(
        self,
        label: str,
        node: SshNode,
        popen: subprocess.Popen[bytes],
        log: IO[bytes],
        log_path: Path,
        log_start: int,
    ) -> None:
        self.label = label
        self.node = node
        self.popen = popen
        self._log = log
        self.log_path = log_path
        # A restart appends to the same log: the lines before this offset are an earlier process's.
        self.log_start = log_start

    def _logged(self, pattern: re.Pattern[bytes]) -> int | None:
        """The wrapper's own lines in the log: the group id and the command's pid on the node."""
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(self.log_start)
                head = handle.read(1 << 20)
        except OSError:
            return None
        found = pattern.findall(head)
        return int(found[0]) if found else None

    def pgid(self) -> int | None:
        return self._logged(PGID_LINE)

    def pid(self) -> int | None:
        return self._logged(PID_LINE)

    def exit_code(self) -> int | None:
        """The command's exit code on the node, once the wrapper has logged it."""
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(max(self.log_start, handle.seek(0, 2) - 4096))
                found = EXIT_LINE.findall(handle.read())
        except OSError:
            return None
        return int(found[-1]) if found else None

    def alive(self) -> bool:
        """The command runs: ssh is up and the wrapper has not logged its exit (a process that left
        the group may hold the connection open after the command itself is gone)."""
        return self.popen.poll() is None and self.exit_code() is None

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        pgid, pid = self.pgid(), self.pid()
        if pgid is not None and self.alive():
            # SIGTERM to the command first (vLLM's API server then shuts its engine down in order).
            steps = (f"kill -TERM {pid or pgid}", f"kill -TERM -{pgid}", f"kill -KILL -{pgid}")
            for step, wait_s in zip(steps, (grace_s, 5.0, 5.0), strict=True):
                self.node.run(["sh", "-c", step + " 2>/dev/null; true"], timeout_s=30)
                deadline = time.monotonic() + wait_s
                while self.alive() and time.monotonic() < deadline:
                    time.sleep(0.2)
                if not self.alive():
                    break
        if self.popen.stdin is not None:
            self.popen.stdin.close()  # the watcher on the node sees EOF: belt and braces
        kill_process_group(self.popen, grace_s=5.0)
        self.popen.wait()
        self._log.close()

    def record(self) -> dict[str, Any]:
        return {
            "ssh_pid": self.popen.pid,
            "remote_pgid": self.pgid(),
            "remote_pid": self.pid(),
            "returncode": self.exit_code() if self.exit_code() is not None else self.popen.poll(),
        }


class SshNode:
    def __init__(self, rank: int, destination: str, gpus: list[int], marker: str, options: list[str]) -> None:
        self.rank = rank
        self.destination = destination
        self.address = ssh_address(destination)
        self.gpus = gpus
        self.marker = marker
        self.options = options
        self.procs: list[SshProc] = []

    def ssh(self) -> list[str]:
        return ["ssh", *BASE_OPTIONS, *self.options, self.destination, "--"]

    def spawn(self, label: str, argv: list[str], env: dict[str, str], log_path: Path) -> SshProc:
        log = log_path.open("ab")
        log_start = log.seek(0, 2)
        popen = subprocess.Popen(
            [*self.ssh(), remote_command(argv, node_env(env, self.marker, self.gpus))],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        proc = SshProc(label, self, popen, log, log_path, log_start)
        self.procs.append(proc)
        return proc

    def run(
        self, argv: list[str], env: dict[str, str] | None = None, timeout_s: float = RUN_TIMEOUT_S
    ) -> tuple[int, str]:
        command = shlex.join(
            ["env", *[f"{k}={v}" for k, v in node_env(env or {}, self.marker, self.gpus).items()], *argv]
        )
        try:
            done = self._over_ssh(command, timeout_s)
        except subprocess.TimeoutExpired:
            return 124, f"timed out after {timeout_s:.0f} s"
        return done.returncode, done.stdout + done.stderr

    def _over_ssh(self, command: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        """``command`` run by the node's shell over SSH, stdin closed, output captured (raises TimeoutExpired)."""
        return subprocess.run(
            [*self.ssh(), command], capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
        )

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        self.procs = []
        # No marker in this command's own environment, so the sweep never matches itself.
        sweep = shlex.join(
            ["sh", "-c", SWEEP, "byog-sweep", f"{NODE_MARKER_ENV}={self.marker}", str(SWEEP_PASSES), str(SWEEP_PAUSE_S)]
        )
        try:
            done = self._over_ssh(sweep, SWEEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            why = f"the sweep took over {SWEEP_TIMEOUT_S} s"
        else:
            if done.returncode == 0:
                return
            said = (done.stdout.strip() or done.stderr.strip()).splitlines()
            why = f"the sweep exited {done.returncode}" + (f": {said[-1]}" if said else "")
        raise node_not_clear(self.rank, self.destination, why, self.marker)

    def record(self) -> dict[str, Any]:
        return {"runtime": "ssh", "destination": self.destination, "gpus": self.gpus, "marker": self.marker}


class SshNodes:
    kind = "ssh"
    # A killed node's end reaches byog when sshd closes the channel and the ssh client exits; the
    # API server's requests can fail before that (a reset gloo connection), and the point must
    # still name the node.
    death_lag_s = 5.0

    def __init__(self, options: list[str] | None = None) -> None:
        self.options = list(options or [])

    def open(self, rank: int, host: str | None, gpus: list[int], marker: str) -> SshNode:
        if not host:
            raise UsageError("the ssh node runtime needs one host per node ('hosts')")
        return SshNode(rank, host, gpus, marker, self.options)
