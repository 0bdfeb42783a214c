"""The ``slurm`` node runtime: each node's processes are ``srun`` steps of the allocation byog runs in.

byog runs inside a Slurm job (``SLURM_JOB_ID``; ``byog slurm submit`` writes one). A node is
one allocated Slurm node; each process byog starts there is one step: ``srun --jobid=J
--nodes=1 --ntasks=1 --nodelist=NODE --overlap --kill-on-bad-exit=1 --job-name=MARKER-ROLE``,
GPUs through ``--gpus-per-node`` (Slurm binds them; byog sets no CUDA_VISIBLE_DEVICES), the
environment through ``--export``. With ``image:`` the step runs in that container through Pyxis
(``--container-image``, ``--container-mounts`` for the model, the run directory and the
driver's byog package, ``--container-env`` so the plan's variables win over the image's). Short commands
(fingerprint, ``ray status``, ``uname -m``) are steps of their own.

A step is found by its name (``squeue --steps --jobs J``), which carries the node's marker: that
is how byog knows the step ids it started and never touches another step. A step has ended when
its ``srun`` has exited (Slurm ends the step when its task exits, is killed, or the step is
cancelled). Teardown is ``scancel --signal=TERM J.S`` (vLLM's API server shuts its engine down
in order), then ``scancel J.S`` for each step byog started; byog never signals a process
Slurm started and never connects to a node by ssh. Nodes are known by their Slurm name
(``SLURMD_NODENAME``): several slurmd may share one host name.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import byog
from byog.core.errors import EnvironmentProblem, UsageError
from byog.core.settings import NODE_MARKER_ENV
from byog.images.fingerprint import oci_arch
from byog.runtimes.local import die_with_parent
from byog.runtimes.nodes import RUN_TIMEOUT_S

STOP_GRACE_S = 20.0
STEP_GONE_S = 30.0  # after `scancel J.S`: Slurm's KillWait, then the step is gone
CONTAINER_BYOG_SRC = "/opt/byog-src"  # on PYTHONPATH in the container: the driver's byog package, read-only


def slurm_env() -> dict[str, str]:
    return dict(os.environ)


def _slurm(argv: list[str], timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=slurm_env())
    except FileNotFoundError:
        raise EnvironmentProblem(
            f"'{argv[0]}' is not installed here: the slurm runtime needs Slurm's client commands"
        ) from None
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"'{shlex.join(argv)}' did not answer within {timeout_s:.0f} s") from None


def hostnames(nodelist: str) -> list[str]:
    """``n[1-3]`` -> ``[n1, n2, n3]``, through ``scontrol show hostnames``."""
    done = _slurm(["scontrol", "show", "hostnames", nodelist])
    if done.returncode != 0:
        raise EnvironmentProblem(f"scontrol could not expand the node list '{nodelist}': {done.stderr.strip()}")
    return done.stdout.split()


def _fields(oneliner: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in oneliner.split() if "=" in part)


GRES_GPU = re.compile(r"gpu(?::[^:(\s]+)?(?::(\d+))?\(IDX:([^)]*)\)")


def gpus_from_gres(gres: str) -> int:
    """GPUs in one node's ``GRES=`` of ``scontrol show job -d`` (``gpu:4(IDX:0-3)``, ``gpu:h100:2(IDX:0,2)``)."""
    total = 0
    for count, idx in GRES_GPU.findall(gres):
        if count:
            total += int(count)
            continue
        for part in filter(None, idx.split(",")):
            lo, _, hi = part.partition("-")
            total += int(hi) - int(lo) + 1 if hi else 1
    return total


def node_gpus(job_detail: str) -> dict[str, int]:
    """Per node, the GPUs the job holds there (``scontrol show job -d J`` lines ``Nodes=... GRES=...``)."""
    out: dict[str, int] = {}
    for line in job_detail.splitlines():
        fields = _fields(line)
        if "Nodes" in fields and "CPU_IDs" in fields:
            for name in hostnames(fields["Nodes"]) if any(c in fields["Nodes"] for c in "[,") else [fields["Nodes"]]:
                out[name] = gpus_from_gres(fields.get("GRES", ""))
    return out


@dataclass(frozen=True)
class Allocation:
    """The Slurm job byog runs in: its id, its nodes (Slurm names, in order), their addresses and GPUs."""

    job_id: str
    nodes: list[str]
    addresses: dict[str, str]  # node -> NodeAddr (what other nodes and clients connect to)
    gpus: dict[str, int] = field(default_factory=dict)  # node -> GPUs the job holds there


def current_allocation(environ: dict[str, str] | None = None) -> Allocation:
    """The allocation byog runs inside, read from SLURM_JOB_ID / SLURM_JOB_NODELIST and scontrol."""
    env = os.environ if environ is None else environ
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        raise UsageError(
            "runtime 'slurm' runs inside a Slurm allocation and SLURM_JOB_ID is unset: "
            "submit the plan with `byog slurm submit PLAN`, or run byog under salloc or sbatch"
        )
    nodelist = env.get("SLURM_JOB_NODELIST") or _fields(_slurm(["scontrol", "show", "job", job_id, "-o"]).stdout).get(
        "NodeList", ""
    )
    names = hostnames(nodelist) if nodelist else []
    if not names:
        raise EnvironmentProblem(f"Slurm job {job_id} holds no nodes (is it still running?)")
    shown = _slurm(["scontrol", "show", "node", "--oneliner", ",".join(names)])
    addresses = {}
    for line in shown.stdout.splitlines():
        fields = _fields(line)
        if "NodeName" in fields:
            addresses[fields["NodeName"]] = fields.get("NodeAddr") or fields["NodeName"]
    detail = _slurm(["scontrol", "show", "job", "--details", job_id]).stdout
    return Allocation(job_id, names, {n: addresses.get(n, n) for n in names}, node_gpus(detail))


def pick_nodes(alloc: Allocation, name: str, nodes: int, wanted: list[str], gpus_per_node: int) -> list[str]:
    """The allocation's nodes a server runs on, rank 0 first: the plan's ``hosts`` or the first N."""
    if wanted:
        foreign = [h for h in wanted if h not in alloc.nodes]
        if foreign:
            raise UsageError(
                f"server '{name}': hosts {', '.join(foreign)} are not nodes of Slurm job {alloc.job_id} "
                f"({', '.join(alloc.nodes)})"
            )
        chosen = list(wanted)
    elif len(alloc.nodes) < nodes:
        raise EnvironmentProblem(
            f"server '{name}' needs {nodes} nodes but Slurm job {alloc.job_id} holds {len(alloc.nodes)} "
            f"({', '.join(alloc.nodes)}): allocate at least {nodes} (`byog slurm submit` sizes the job to the plan)"
        )
    else:
        chosen = alloc.nodes[:nodes]
    if gpus_per_node:
        short = [n for n in chosen if alloc.gpus.get(n, 0) < gpus_per_node]
        if short:
            have = ", ".join(f"{n}: {alloc.gpus.get(n, 0)}" for n in short)
            raise EnvironmentProblem(
                f"server '{name}' needs {gpus_per_node} GPUs per node but Slurm job {alloc.job_id} holds fewer ({have})"
            )
    return chosen


@dataclass(frozen=True)
class Container:
    """A step's container through Pyxis: the image and what is mounted into it."""

    image: str
    mounts: tuple[str, ...] = ()  # SRC:DST[:FLAGS]
    workdir: str | None = None

    def srun_flags(self, env_names: list[str]) -> list[str]:
        flags = [f"--container-image={self.image}"]
        if self.mounts:
            flags.append(f"--container-mounts={','.join(self.mounts)}")
        if self.workdir:
            flags.append(f"--container-workdir={self.workdir}")
        if env_names:
            flags.append(f"--container-env={','.join(env_names)}")
        return flags


def container_for(image: str, model_path: str, run_dir: Path) -> Container:
    """The model (a local directory) and the run directory at their own paths, and the driver's byog package."""
    package = Path(byog.__file__).resolve().parent  # the package alone: never the host's site-packages
    mounts = [f"{run_dir}:{run_dir}", f"{package}:{CONTAINER_BYOG_SRC}/byog:ro"]
    if Path(model_path).is_absolute():
        mounts.insert(0, f"{model_path}:{model_path}:ro")
    return Container(image, tuple(mounts), str(run_dir))


def export_flag(env: dict[str, str]) -> str:
    """``--export=ALL,K=V,...``; a value with a comma is passed by name (srun's own environment holds it)."""
    parts = ["ALL"] + [k if "," in v else f"{k}={v}" for k, v in env.items()]
    return "--export=" + ",".join(parts)


def srun_argv(
    job_id: str,
    node: str,
    step_name: str,
    argv: list[str],
    env: dict[str, str],
    *,
    gpus_per_node: int = 0,
    container: Container | None = None,
) -> list[str]:
    """One step on one node of the job: the exact srun command byog runs (and ``byog plan`` prints)."""
    out = [
        "srun",
        f"--jobid={job_id}",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={node}",
        "--overlap",
        "--kill-on-bad-exit=1",
        f"--job-name={step_name}",
    ]
    if gpus_per_node:
        out.append(f"--gpus-per-node={gpus_per_node}")
    out.append(export_flag(env))
    if container is not None:
        out += container.srun_flags(list(env))
    return [*out, *argv]


def step_ids(job_id: str) -> dict[str, str]:
    """Step name -> step id (``J.S``) of every step of this job Slurm lists now."""
    done = _slurm(["squeue", "--steps", f"--jobs={job_id}", "--noheader", "--format=%i %j"], timeout_s=30)
    out = {}
    for line in done.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            out[parts[1].strip()] = parts[0]
    return out


def cancel_step(step_id: str, signal_name: str | None = None) -> None:
    """``scancel [--signal=SIG] J.S``: one step of byog's, never a whole job."""
    if "." not in step_id:
        raise ValueError(f"not a step id: {step_id}")
    _slurm(["scancel", *([f"--signal={signal_name}"] if signal_name else []), step_id], timeout_s=30)


class SlurmProc:
    """One srun step; alive while its srun runs (srun exits when Slurm ends the step)."""

    def __init__(
        self, label: str, node: SlurmNode, name: str, argv: list[str], popen: subprocess.Popen[bytes], log: IO[bytes]
    ) -> None:
        self.label = label
        self.node = node
        self.name = name
        self.srun_argv = argv
        self.popen = popen
        self._log = log
        self._step_id: str | None = None

    def step_id(self, wait_s: float = 0.0) -> str | None:
        """This step's ``J.S`` (by its name in ``squeue``), once Slurm has started it."""
        deadline = time.monotonic() + wait_s
        while self._step_id is None:
            self._step_id = step_ids(self.node.job_id).get(self.name)
            if self._step_id is not None or time.monotonic() >= deadline or self.popen.poll() is not None:
                break
            time.sleep(0.2)
        return self._step_id

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        step = self.step_id(wait_s=5.0) if self.alive() else self._step_id
        if step is not None and self.alive():
            if grace_s > 0:
                cancel_step(step, "TERM")
                _wait(self.popen, grace_s)
            if self.alive():
                cancel_step(step)
                _wait(self.popen, STEP_GONE_S)
        if self.alive():  # Slurm never listed the step: stop our own srun, which ends the step it made
            self.popen.terminate()
            _wait(self.popen, STEP_GONE_S)
            if self.alive():
                self.popen.kill()
        self.popen.wait()
        self._log.close()

    def record(self) -> dict[str, Any]:
        return {
            "job_id": self.node.job_id,
            "step_id": self._step_id,
            "step_name": self.name,
            "slurm_node": self.node.slurm_name,
            "srun_argv": self.srun_argv,
            "srun_pid": self.popen.pid,
            "returncode": self.popen.poll(),
        }


def _wait(popen: subprocess.Popen[bytes], timeout_s: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        popen.wait(timeout_s)


class SlurmNode:
    def __init__(
        self,
        rank: int,
        slurm_name: str,
        address: str,
        job_id: str,
        marker: str,
        gpus_per_node: int,
        container: Container | None,
    ) -> None:
        self.rank = rank
        self.slurm_name = slurm_name
        self.address = address
        self.job_id = job_id
        self.marker = marker
        self.gpus_per_node = gpus_per_node
        self.container = container
        self.procs: list[SlurmProc] = []
        self._runs = 0

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        out = {**env, NODE_MARKER_ENV: self.marker}
        if self.container is not None and "PYTHONPATH" not in out:
            out["PYTHONPATH"] = CONTAINER_BYOG_SRC
        return out

    def argv(self, step_name: str, argv: list[str], env: dict[str, str], *, container: bool = True) -> list[str]:
        return srun_argv(
            self.job_id,
            self.slurm_name,
            step_name,
            argv,
            self._env(env),
            gpus_per_node=self.gpus_per_node,
            container=self.container if container else None,
        )

    def step_name(self, label: str) -> str:
        """The Slurm step's name: the node's marker and the step's role."""
        return f"{self.marker}-{label}"

    def spawn(self, label: str, argv: list[str], env: dict[str, str], log_path: Path) -> SlurmProc:
        name = self.step_name(label)
        full = self.argv(name, argv, env)
        log = log_path.open("ab")
        popen = subprocess.Popen(
            full,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**slurm_env(), **self._env(env)},
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        proc = SlurmProc(label, self, name, full, popen, log)
        self.procs.append(proc)
        proc.step_id(wait_s=10.0)
        return proc

    def run(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        timeout_s: float = RUN_TIMEOUT_S,
        *,
        container: bool = True,
    ) -> tuple[int, str]:
        self._runs += 1
        name = f"{self.marker}-run{self._runs}"
        full = self.argv(name, argv, env or {}, container=container)
        try:
            done = subprocess.run(
                full,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                stdin=subprocess.DEVNULL,
                env={**slurm_env(), **self._env(env or {})},
            )
        except subprocess.TimeoutExpired:
            step = step_ids(self.job_id).get(name)
            if step is not None:
                cancel_step(step)
            return 124, f"timed out after {timeout_s:.0f} s"
        return done.returncode, done.stdout + done.stderr

    def machine(self) -> str:
        """The node's architecture (``uname -m`` in a step outside any container), as amd64/arm64."""
        code, out = self.run(["uname", "-m"], timeout_s=60, container=False)
        if code != 0:
            raise EnvironmentProblem(f"Slurm node {self.slurm_name}: `uname -m` failed: {out.strip()[-300:]}")
        return oci_arch(out.strip().splitlines()[-1])

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        self.procs = []
        # Any step still listed under this node's marker (a short command whose srun was lost).
        for name, step in step_ids(self.job_id).items():
            if name.startswith(f"{self.marker}-"):
                cancel_step(step)

    def record(self) -> dict[str, Any]:
        return {
            "runtime": "slurm",
            "job_id": self.job_id,
            "slurm_node": self.slurm_name,
            "gpus": self.gpus_per_node,
            "marker": self.marker,
            "container": self.container.image if self.container else None,
            "slurm_steps": [p.record() for p in self.procs],
        }


class SlurmNodes:
    """Opens the allocation's nodes (``nodes``, rank 0 first) as ``SlurmNode``s."""

    kind = "slurm"
    # A cancelled step ends after Slurm's KillWait (30 s by default), and only then does its srun exit.
    death_lag_s = 35.0

    def __init__(
        self,
        alloc: Allocation,
        nodes: list[str],
        gpus_per_node: int,
        container: Container | None = None,
        cpu_build: bool = False,
        platform: str | None = None,
    ) -> None:
        self.alloc = alloc
        self.slurm_nodes = nodes
        self.gpus_per_node = gpus_per_node
        self.container = container
        self.cpu_build = cpu_build
        self.image = container.image if container else None
        self.platform = platform
        if container is not None:
            self.python = "python3"

    def addresses(self) -> list[str]:
        return [self.alloc.addresses[n] for n in self.slurm_nodes]

    def open(self, rank: int, host: str | None, gpus: list[int], marker: str) -> SlurmNode:  # noqa: ARG002 (NodeRuntime.open; srun places the node)
        name = self.slurm_nodes[rank]
        return SlurmNode(
            rank, name, self.alloc.addresses[name], self.alloc.job_id, marker, self.gpus_per_node, self.container
        )

    def check_architecture(self, nodes: list[SlurmNode], server: str) -> None:
        """Refuse, before anything starts, a node whose architecture is not the image's."""
        if not self.platform:
            return
        want = oci_arch(self.platform.split("/")[-1])
        for node in nodes:
            have = node.machine()
            if have != want:
                raise EnvironmentProblem(
                    f"server '{server}': Slurm node {node.slurm_name} is {have} but the image is {self.platform}: "
                    f"run on {want} nodes, or build the image with `byog image build --platform linux/{have}`"
                )
