"""`byog plan` prints what a launch starts: each node step's argv and env, as the node runtime would
start it, is the line ``describe_cluster`` prints for it (and on Slurm, the srun command is the line).

No process starts: ``subprocess.Popen`` records what each node would run, and Slurm's step lookup
is stubbed; the ``ClusterServer`` itself plans, opens its nodes and starts every phase as it does
at launch.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from byog.core.settings import NODE_MARKER_ENV
from byog.runtimes.cluster import (
    DEFAULT_API_PORT,
    ClusterServer,
    cluster_spec,
    default_rendezvous_port,
    describe_cluster,
    node_addresses,
)
from byog.runtimes.launch import server_env
from byog.runtimes.launchers import ClusterPlan, NodeStep
from byog.runtimes.nodes import LocalNodes, NodeRuntime
from byog.runtimes.slurm_nodes import Allocation, SlurmNodes, SlurmProc, container_for
from byog.runtimes.ssh_nodes import SshNodes
from byog.schemas.plan import ServerConfig, server_config
from byog.schemas.server import PreparedModel

MODEL = PreparedModel(path="/models/m", served_name="m", tokenizer="/models/m", max_model_len=1024)
IMAGE = "vllm@sha256:" + "0" * 64


class GpuLocalNodes(LocalNodes):
    """This machine's nodes as a GPU build sees them (``byog plan`` shows a GPU build's launch)."""

    cpu_build = False  # type: ignore[assignment]


class RecordedPopen:
    """Stands in for a node's process: records what would run, and runs nothing."""

    started: list[RecordedPopen] = []

    def __init__(self, args: list[str], **kwargs: Any) -> None:
        self.args = list(args)
        self.env = dict(kwargs.get("env") or {})
        self.pid = 0
        RecordedPopen.started.append(self)

    def poll(self) -> int | None:
        return None


def slurm_nodes(config: ServerConfig) -> SlurmNodes:
    """The allocation as ``byog plan`` names it: job $SLURM_JOB_ID, nodes $NODEr at addresses $NODEr."""
    names = [f"$NODE{rank}" for rank in range(config.nodes)]
    per_node = config.gpus_per_node or 0
    alloc = Allocation("$SLURM_JOB_ID", names, {n: n for n in names}, {n: per_node for n in names})
    container = container_for(config.image, MODEL.path, Path("$RUN_DIR")) if config.image else None
    return SlurmNodes(alloc, names, per_node, container)


def runtime_of(config: ServerConfig) -> tuple[NodeRuntime, list[str]]:
    if config.runtime == "slurm":
        runtime = slurm_nodes(config)
        return runtime, runtime.addresses()
    spec = cluster_spec(config)
    return (SshNodes() if config.runtime == "ssh" else GpuLocalNodes()), node_addresses(spec)


def started_step(server: ClusterServer, step: NodeStep, popen: RecordedPopen) -> NodeStep:
    """The step as its process was started: argv and env read back from what the node ran (on Slurm,
    what the node was given: the srun command that carries it is compared whole)."""
    if server.runtime.kind == "slurm":
        return step
    if server.runtime.kind == "ssh":  # ssh ... 'env MARKER setsid ... byog-node env K=V ... argv'
        words = shlex.split(popen.args[-1])
        words = words[words.index("byog-node") + 2 :]
        n_env = next(i for i, w in enumerate(words) if "=" not in w)
        env = dict(w.split("=", 1) for w in words[:n_env])
        argv = words[n_env:]
    else:
        argv, env = popen.args, popen.env
    return replace(step, argv=argv, env={k: v for k, v in env.items() if k != NODE_MARKER_ENV})


def section(lines: list[str], launcher: str) -> list[str]:
    """describe_cluster's lines for the plan's launcher, unindented (the header line first)."""
    start = lines.index(next(line for line in lines if line.startswith(f"  launcher {launcher} (the plan's)")))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("  launcher ")), len(lines))
    return [line.strip() for line in lines[start:end]]


CONFIGS = {
    "native, two local nodes": server_config(nodes=2, tensor_parallel_size=2, env={"A": "1"}),
    "ray, two local nodes": server_config(nodes=2, tensor_parallel_size=4, launcher="ray", ray_args=["--num-cpus=8"]),
    "native over ssh": server_config(
        runtime="ssh", nodes=2, hosts=["u@tray0", "u@tray1"], tensor_parallel_size=8, python="/opt/py"
    ),
    "ray over ssh": server_config(
        runtime="ssh", nodes=3, hosts=["a", "b", "c"], tensor_parallel_size=3, launcher="ray"
    ),
    "slurm, 4 GPUs per node": server_config(runtime="slurm", nodes=2, tensor_parallel_size=8, gpus_per_node=4),
    "slurm in an image, ray": server_config(
        runtime="slurm", nodes=2, tensor_parallel_size=4, gpus_per_node=2, image=IMAGE, launcher="ray"
    ),
}


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_byog_plan_prints_what_the_cluster_starts(
    config: ServerConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in list(os.environ):  # what the nodes add, not this test's environment
        monkeypatch.delenv(key)
    monkeypatch.setattr(subprocess, "Popen", RecordedPopen)
    monkeypatch.setattr(SlurmProc, "step_id", lambda self, wait_s=0.0: None)
    RecordedPopen.started = []
    runtime, addresses = runtime_of(config)
    spec = cluster_spec(config)
    if config.runtime == "local":  # this machine's nodes get free ports; the plan shows the defaults
        spec = replace(spec, api_port=DEFAULT_API_PORT, rendezvous_port=default_rendezvous_port(spec.launcher))
    server = ClusterServer("s", config, MODEL, tmp_path, spec, runtime, addresses)
    server.launch = server._launch(server_env(config))  # as start() plans, once the nodes say GPU build
    server._open_each_node("$START_ID")
    for phase in range(config.nodes + 1):
        server._start_phase(phase)
    try:
        assert len(RecordedPopen.started) == len(server.plan.steps) == len(server.running)
        started = [started_step(server, r.step, p) for r, p in zip(server.running, RecordedPopen.started, strict=True)]
        plan = server.plan
        shown = ClusterPlan(plan.launcher, plan.addresses, plan.api_port, plan.rendezvous_port, started)
        expected = [f"launcher {plan.launcher} (the plan's); endpoint {plan.base_url}:", *shown.describe()]
        if config.runtime == "slurm":  # the srun commands byog runs, exactly
            expected += [
                f"srun (node {r.step.rank}): {shlex.join(p.args)}"
                for r, p in zip(server.running, RecordedPopen.started, strict=True)
            ]
        assert section(describe_cluster("s", config, MODEL), config.launcher) == expected
        gpus = describe_cluster("s", config, MODEL)[0].split(" x ")[1].split(" GPU")[0]
        assert int(gpus) == server.gpus_per_node
    finally:
        for item in server.running:
            item.proc._log.close()  # type: ignore[attr-defined]
