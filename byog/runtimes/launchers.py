"""What each node of a multi-node server runs, for vLLM's two launchers: pure data, no process.

A server of N nodes is N copies of one vLLM install cooperating on one model. vLLM has two ways
to start them, and byog speaks both:

- ``native`` (vLLM's own multiprocessing launcher): every node runs ``vllm serve`` with the same
  arguments plus ``--distributed-executor-backend mp --nnodes N --node-rank R --master-addr HEAD
  --master-port P``; ranks 1..N-1 add ``--headless`` (no API server, workers only). The API server
  on rank 0 becomes healthy only once every rank has joined the process group.
- ``ray``: the head runs ``ray start --head``, then each other node in turn ``ray start --address
  HEAD:PORT`` (one at a time: a raylet that cannot register within Ray's fixed 30 s fails, and N
  raylets starting together on a loaded host do); once Ray lists N live nodes the head runs ``vllm serve ...
  --distributed-executor-backend ray`` and Ray places the workers. Each node's ``ray start --block`` stays in the
  foreground, so the
  node's process is the Ray node: stopping it removes that node from the cluster.

``native_plan`` and ``ray_plan`` return one ``NodeStep`` per process, each with its phase: native
starts everything in phase 0; Ray starts node k in phase k, each after Ray lists k live nodes,
and its serve step in phase N, after every node has joined. The same steps
are what ``byog plan`` prints and what ``server.json`` records, so the printed launch is the
launch.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Literal

from byog.core.argv import arg_value
from byog.core.errors import UsageError
from byog.runtimes.launch import DEV_MODE_ENV, vllm_serve_args
from byog.schemas.plan import ServerBase
from byog.schemas.server import PreparedModel

Launcher = Literal["native", "ray"]

# Flags byog sets for a multi-node launch; a server config's `args` may not set them too.
OWNED_FLAGS = (
    "--nnodes",
    "--node-rank",
    "--master-addr",
    "--master-port",
    "--headless",
    "--distributed-executor-backend",
    "--data-parallel-address",
)
RAY_MODULE = "ray.scripts.scripts"  # `python -m ray.scripts.scripts start` is the `ray` command
# A Ray node never phones home and starts no dashboard (no network here, and it costs a core).
RAY_QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0"}


@dataclass(frozen=True)
class NodeStep:
    """One process on one node: ``argv`` with ``env`` on top of the node's own environment."""

    rank: int
    role: Literal["serve", "headless", "ray-head", "ray-worker"]
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    phase: int = 0  # steps of one phase start together; Ray: phase k after k nodes have joined

    @property
    def serves(self) -> bool:
        """This step runs the API server clients talk to."""
        return self.role == "serve"


@dataclass(frozen=True)
class ClusterPlan:
    """Every step of one multi-node launch, and where clients and nodes meet."""

    launcher: Launcher
    addresses: list[str]  # node r's address (rank 0 = head)
    api_port: int
    rendezvous_port: int  # --master-port (native) or Ray's GCS port (ray)
    steps: list[NodeStep]

    @property
    def head(self) -> str:
        return self.addresses[0]

    @property
    def base_url(self) -> str:
        return f"http://{self.head}:{self.api_port}"

    def steps_of(self, rank: int) -> list[NodeStep]:
        return [step for step in self.steps if step.rank == rank]

    def describe(self) -> list[str]:
        """One line per step: where it runs and the exact command (what `byog plan` prints)."""
        lines = []
        for step in self.steps:
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(step.env.items()))
            when = f" (once Ray lists {step.phase} node{'s' if step.phase > 1 else ''})" if step.phase else ""
            lines.append(
                f"node {step.rank} @ {self.addresses[step.rank]} [{step.role}]{when}: "
                f"{env + ' ' if env else ''}{shlex.join(step.argv)}"
            )
        return lines


def world_size(config: ServerBase) -> int:
    """GPUs (or CPU ranks) one server uses (``ServerBase.world_size``)."""
    return config.world_size()


def check_split(config: ServerBase, nodes: int, gpus_per_node: int, name: str) -> None:
    """The sizes must fill the nodes exactly: vLLM's native launcher puts world/N ranks on each node."""
    if nodes < 2:
        raise UsageError(f"server '{name}': a multi-node server needs nodes >= 2 (got {nodes})")
    for flag in OWNED_FLAGS:
        if arg_value(list(config.args), flag) is not None or flag in config.args:
            raise UsageError(f"server '{name}': byog sets {flag} for a multi-node server; remove it from 'args'")
    world = world_size(config)
    if world % nodes:
        raise UsageError(f"server '{name}': TP x PP x DP = {world} ranks do not split evenly over {nodes} nodes")
    if gpus_per_node and world != nodes * gpus_per_node:
        raise UsageError(
            f"server '{name}': TP x PP x DP = {world} GPUs, but {nodes} nodes x {gpus_per_node} GPUs "
            f"= {nodes * gpus_per_node}"
        )


def serve_prefix(python: str) -> list[str]:
    """`vllm serve` through byog's entry point (it also starts the CPU build; see vllm_entry)."""
    return [python, "-m", "byog.images.vllm_entry", "serve"]


def native_plan(
    config: ServerBase, model: PreparedModel, addresses: list[str], *, python: str, api_port: int, master_port: int
) -> ClusterPlan:
    nodes = len(addresses)
    head = addresses[0]
    steps = []
    for rank, address in enumerate(addresses):
        argv = [
            *serve_prefix(python),
            *vllm_serve_args(config, model, head, api_port),
            "--distributed-executor-backend",
            "mp",
            "--nnodes",
            str(nodes),
            "--node-rank",
            str(rank),
            "--master-addr",
            head,
            "--master-port",
            str(master_port),
        ]
        env = {"VLLM_HOST_IP": address}
        if rank:
            argv.append("--headless")
        else:
            env.update(DEV_MODE_ENV)
        steps.append(NodeStep(rank=rank, role="headless" if rank else "serve", argv=argv, env=env))
    return ClusterPlan("native", addresses, api_port, master_port, steps)


def ray_plan(
    config: ServerBase,
    model: PreparedModel,
    addresses: list[str],
    *,
    python: str,
    api_port: int,
    ray_port: int,
    gpus_per_node: int,
    ray_args: list[str] | None = None,
) -> ClusterPlan:
    head = addresses[0]
    ray = [python, "-m", RAY_MODULE, "start", "--block", "--disable-usage-stats", *(ray_args or [])]
    if gpus_per_node:
        ray += ["--num-gpus", str(gpus_per_node)]
    steps = []
    for rank, address in enumerate(addresses):
        if rank == 0:
            argv = [*ray, "--head", "--port", str(ray_port), "--node-ip-address", address, "--include-dashboard=false"]
        else:
            argv = [*ray, "--address", f"{head}:{ray_port}", "--node-ip-address", address]
        steps.append(
            NodeStep(
                rank=rank,
                role="ray-head" if rank == 0 else "ray-worker",
                argv=argv,
                env={**RAY_QUIET_ENV, "VLLM_HOST_IP": address},
                phase=rank,
            )
        )
    serve = [
        *serve_prefix(python),
        *vllm_serve_args(config, model, head, api_port),
        "--distributed-executor-backend",
        "ray",
    ]
    steps.append(
        NodeStep(
            rank=0,
            role="serve",
            argv=serve,
            phase=len(addresses),
            env={**RAY_QUIET_ENV, **DEV_MODE_ENV, "VLLM_HOST_IP": head, "RAY_ADDRESS": f"{head}:{ray_port}"},
        )
    )
    return ClusterPlan("ray", addresses, api_port, ray_port, steps)


def ray_status_argv(python: str, head: str, ray_port: int) -> list[str]:
    return [python, "-m", RAY_MODULE, "status", "--address", f"{head}:{ray_port}"]


def ray_live_nodes(status_text: str) -> int:
    """Live nodes in `ray status` output: the lines under "Active:" naming a node (``1 node_<id>``)."""
    count, active = 0, False
    for line in status_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Active:"):
            active = True
            continue
        if active:
            if stripped.endswith(":") or not stripped:  # "Pending:", "Recent failures:" end the section
                if stripped:
                    break
                continue
            if "node_" in stripped:
                count += 1
    return count


def gpu_ids(addresses: list[str], gpus_per_node: int) -> list[list[int]]:
    """The GPUs each node uses: nodes sharing a host get disjoint ranges, in rank order.

    Two nodes on one host (a test, or one 8-GPU box split into two 4-GPU nodes) must not both take
    GPU 0; nodes on different hosts each start at 0.
    """
    seen: dict[str, int] = {}
    out = []
    for address in addresses:
        k = seen.get(address, 0)
        seen[address] = k + 1
        out.append(list(range(k * gpus_per_node, (k + 1) * gpus_per_node)))
    return out
