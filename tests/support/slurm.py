"""A real Slurm cluster on this machine for the tests: munged, one slurmctld, three slurmd.

Debian's ``slurm-wlm`` is built with multiple-slurmd support, so three slurmd daemons
(``slurmd -N n1`` .. ``n3``) on this host are three Slurm nodes: ``NodeName=n[1-3]
NodeHostname=<this host> NodeAddr=127.0.0.1 Port=17001-17003``. Every node reports the same
hostname, so a node is known by ``SLURMD_NODENAME``, never ``hostname``. ``proctrack/cgroup``
(with ``cgroup.conf`` beside ``slurm.conf``) is what makes ``scancel`` of a step also end
processes that left the step's process group.

Everything lives in one temporary directory (config, state, spool, logs, the munge key and
socket); client commands find the cluster through ``SLURM_CONF``. ``start_cluster`` yields a
``SlurmCluster`` and stops every daemon it started by pid.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NODES = ("n1", "n2", "n3")
SLURMD_PORTS = (17001, 17002, 17003)
PARTITION = "debug"
DAEMONS = ("munged", "slurmctld", "slurmd")


def slurm_available() -> str | None:
    """Why a test cluster cannot start here, or None."""
    missing = [d for d in DAEMONS if shutil.which(d) is None and not Path(f"/usr/sbin/{d}").is_file()]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "the test Slurm cluster runs its daemons as root"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    env: dict[str, str]  # what client commands need (SLURM_CONF) on top of os.environ
    pids: dict[str, int]
    started_s: float  # daemons started to every node idle

    def run(self, *argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv), env={**os.environ, **self.env}, capture_output=True, text=True, check=check, timeout=timeout
        )

    def squeue_steps(self) -> list[str]:
        """Every step the cluster runs: ``STEPID NAME NODES``."""
        out = self.run("squeue", "--steps", "--noheader", "--format=%i %j %N").stdout
        return [line.strip() for line in out.splitlines() if line.strip()]

    def allocate(self, nodes: int = len(NODES), *extra: str) -> str:
        """A job holding ``nodes`` whole nodes and running nothing (``salloc --no-shell``): its id."""
        out = self.run(
            "salloc", "--no-shell", f"--nodes={nodes}", "--exclusive", "--immediate=30", *extra, timeout=60
        ).stderr
        for word in out.replace(":", " ").split():
            if word.isdigit():
                return word
        raise RuntimeError(f"salloc gave no job id: {out}")

    def job_env(self, job_id: str) -> dict[str, str]:
        """The variables Slurm sets for a batch script of that job (what byog reads inside an allocation)."""
        info = self.run("scontrol", "show", "job", job_id, "--oneliner").stdout
        fields = dict(part.split("=", 1) for part in info.split() if "=" in part)
        return {**self.env, "SLURM_JOB_ID": job_id, "SLURM_JOB_NODELIST": fields["NodeList"]}

    def cancel(self, job_id: str) -> None:
        """scancel the job, then wait until it has left the queue and, the queue empty, every node is
        idle again: a node a test left drained (a step Slurm could not kill) fails here, naming it, not
        as the next job pending for ever."""
        self.run("scancel", job_id, check=False)
        deadline = time.monotonic() + 90
        while True:
            queued = self.run("squeue", "--noheader", "--format=%i", check=False).stdout.split()
            if job_id not in queued and (queued or self.all_idle()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job_id} cancelled but the cluster is not idle after 90 s: {self.diagnosis()}")
            time.sleep(0.2)

    def node_states(self) -> dict[str, str]:
        out = self.run("sinfo", "--noheader", "--Node", "--format=%N %t", check=False).stdout
        return dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)

    def all_idle(self) -> bool:
        states = self.node_states()
        return bool(states) and all(state == "idle" for state in states.values())

    def diagnosis(self) -> str:
        """Node states with their reasons, the queue with each job's reason, slurmctld's last lines."""
        reasons = self.run("sinfo", "--list-reasons", "--noheader", check=False).stdout.strip() or "(none)"
        queue = self.run("squeue", "--noheader", "--format=%i %j %T %r", check=False).stdout.strip() or "(empty)"
        states = ", ".join(f"{n} {s}" for n, s in self.node_states().items())
        return (
            f"nodes: {states}; drained/down reasons: {reasons}; queue: {queue}\n"
            f"slurmctld.log:\n{_tail(self.root / 'slurmctld.log')}"
        )


def _write_config(root: Path, ctld_port: int, munge_socket: Path) -> Path:
    host = socket.gethostname()
    cpus = os.cpu_count() or 2
    nodes = NODES[0][0] + "[" + NODES[0][1:] + "-" + NODES[-1][1:] + "]"
    ports = f"{SLURMD_PORTS[0]}-{SLURMD_PORTS[-1]}"
    conf = root / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=byogtest",
                f"SlurmctldHost={host}(127.0.0.1)",
                f"SlurmctldPort={ctld_port}",
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={munge_socket}",
                f"StateSaveLocation={root}/state",
                f"SlurmdSpoolDir={root}/spool/%n",
                f"SlurmctldPidFile={root}/slurmctld.pid",
                f"SlurmdPidFile={root}/slurmd-%n.pid",
                f"SlurmctldLogFile={root}/slurmctld.log",
                f"SlurmdLogFile={root}/slurmd-%n.log",
                "ProctrackType=proctrack/cgroup",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "MpiDefault=none",
                "SwitchType=switch/none",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none",
                "SchedulerType=sched/backfill",
                "ReturnToService=2",
                "KillWait=5",
                "MessageTimeout=30",
                "SlurmdTimeout=300",
                "InactiveLimit=0",
                "MinJobAge=600",  # a finished job stays listed (scontrol show job) for its test to read
                f"NodeName={nodes} NodeHostname={host} NodeAddr=127.0.0.1 Port={ports} CPUs={cpus} State=UNKNOWN",
                f"PartitionName={PARTITION} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )
    )
    (root / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nConstrainCores=no\nConstrainRAMSpace=no\n")
    for sub in ["state", *[f"spool/{n}" for n in NODES]]:
        (root / sub).mkdir(parents=True, exist_ok=True)
    return conf


def _wait_pidfile(path: Path, timeout_s: float, log: Path) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip().isdigit():
            return int(path.read_text().strip())
        time.sleep(0.05)
    raise RuntimeError(f"no {path.name} after {timeout_s:.0f} s; {log.name}:\n{_tail(log)}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(pids: dict[str, int]) -> None:
    for pid in pids.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for pid in pids.values():
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def start_cluster(root: Path) -> Iterator[SlurmCluster]:
    """Start munged, slurmctld and three slurmd in ``root``; yield once every node is idle; stop them all."""
    t0 = time.monotonic()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)  # munged and slurmd refuse group/world-writable directories on their paths
    munge = root / "munge"
    munge.mkdir(mode=0o700, exist_ok=True)
    key = munge / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    munge_socket = munge / "munge.socket"
    pids: dict[str, int] = {}
    try:
        subprocess.run(
            [
                "munged",
                "--force",
                f"--key-file={key}",
                f"--socket={munge_socket}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--log-file={munge / 'munged.log'}",
                f"--seed-file={munge / 'munged.seed'}",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        pids["munged"] = _wait_pidfile(munge / "munged.pid", 10, munge / "munged.log")
        conf = _write_config(root, _free_port(), munge_socket)
        env = {"SLURM_CONF": str(conf)}
        full = {**os.environ, **env}
        subprocess.run(["slurmctld", "-f", str(conf)], env=full, check=True, capture_output=True, timeout=30)
        pids["slurmctld"] = _wait_pidfile(root / "slurmctld.pid", 20, root / "slurmctld.log")
        for node in NODES:
            subprocess.run(
                ["slurmd", "-f", str(conf), "-N", node], env=full, check=True, capture_output=True, timeout=30
            )
            pids[f"slurmd-{node}"] = _wait_pidfile(root / f"slurmd-{node}.pid", 20, root / f"slurmd-{node}.log")
        cluster = SlurmCluster(root, conf, env, pids, 0.0)
        deadline = time.monotonic() + 60
        while not cluster.all_idle():
            if time.monotonic() > deadline:
                raise RuntimeError(f"nodes not idle after 60 s: {cluster.diagnosis()}")
            time.sleep(0.2)
        cluster.started_s = time.monotonic() - t0
        yield cluster
    finally:
        _stop(pids)
