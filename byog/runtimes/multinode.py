"""Tensor parallelism beyond one host: the Ray launch vLLM documents, as docker SDK calls per node.

vLLM's recipe (examples/online_serving/run_cluster.sh and the distributed-serving docs): every
node runs the same image with host networking; the head runs ``ray start --head --port=6379``,
each worker ``ray start --address=<head>:6379``, each with ``VLLM_HOST_IP`` set to its own
address; then ``vllm serve ... --tensor-parallel-size N --distributed-executor-backend ray``
runs on the head and Ray places the N workers across the nodes (TP16 = four 4-GPU trays).

``multinode_specs`` turns a server config into one ``NodeSpec`` per node: which engine to talk to
(``ssh://user@host``, i.e. ``docker.DockerClient(base_url=...)``), the ``containers.run`` keyword
arguments, and for the head the ``vllm serve`` argv to ``exec`` once Ray sees every node.
``describe_launch`` renders them as lines a person (or ``byog plan``) prints; ``launch_multinode``
performs the calls. Generated and unit-tested here; never run against real trays (docs/images.md).
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from byog.core.argv import arg_value
from byog.core.errors import UsageError
from byog.images.engine import docker_client
from byog.runtimes.container import (
    CONTAINER_HF_HOME,
    PASSTHROUGH_ENV,
    container_name,
    gpus_for,
    run_labels,
)
from byog.runtimes.launch import redact_env, server_env, vllm_serve_args
from byog.schemas.plan import ServerConfig
from byog.schemas.server import PreparedModel

RAY_PORT = 6379
SERVE_PORT = 8000
DEFAULT_NODE_HF_CACHE = "/root/.cache/huggingface"  # absolute: the remote engine resolves it on its own host


@dataclass(frozen=True)
class NodeSpec:
    rank: int
    role: Literal["head", "worker"]
    docker_host: str  # base_url for docker.DockerClient, e.g. ssh://ubuntu@tray0
    node_ip: str  # the address the other nodes reach this one at (VLLM_HOST_IP)
    run_kwargs: dict[str, Any]  # containers.run(**run_kwargs); device requests as plain data
    serve_argv: list[str] | None = None  # head only: exec'd in the head container once Ray has every node
    expected_nodes: int = 1
    gpus_per_node: int = 0
    notes: list[str] = field(default_factory=list)


def parse_host(host: str) -> tuple[str, str]:
    """``ssh://user@host[:port]`` or ``user@host`` -> (docker base_url, node address)."""
    url = host if "://" in host else f"ssh://{host}"
    if not url.startswith("ssh://"):
        raise UsageError(
            f"multi-node host '{host}' must be an ssh:// address (docker over SSH), e.g. ssh://ubuntu@tray0"
        )
    address = url[len("ssh://") :].rsplit("@", 1)[-1].split(":")[0].strip("/")
    if not address:
        raise UsageError(f"multi-node host '{host}' names no machine")
    return url, address


def placeholder_hosts(nodes: int) -> list[str]:
    return [f"ssh://USER@node{rank}" for rank in range(nodes)]


def nodes_needed(config: ServerConfig, gpus_per_node: int) -> int:
    world = config.tensor_parallel_size * config.data_parallel_size
    if world % gpus_per_node:
        raise UsageError(f"TP x DP = {world} GPUs do not split evenly over nodes of {gpus_per_node} GPUs")
    return max(1, world // gpus_per_node)


def multinode_specs(
    config: ServerConfig,
    model: PreparedModel,
    hosts: list[str],
    *,
    name: str = "server",
    run_id: str = "plan",
    gpus_per_node: int | None = None,
    serve_port: int = SERVE_PORT,
    hf_cache: str = DEFAULT_NODE_HF_CACHE,
) -> list[NodeSpec]:
    """One spec per host; ``hosts[0]`` is the head. Refuses a size that does not fill the hosts."""
    if not config.image:
        raise UsageError(f"server '{name}': a multi-node launch needs 'image' (the same image on every node)")
    if len(hosts) < 2:
        raise UsageError(f"server '{name}': a multi-node launch needs at least two hosts (got {len(hosts)})")
    world = config.tensor_parallel_size * config.data_parallel_size
    per_node = gpus_per_node or world // len(hosts)
    if per_node < 1 or per_node * len(hosts) != world:
        raise UsageError(
            f"server '{name}': TP x DP = {world} GPUs cannot be spread as {per_node} per node over {len(hosts)} hosts"
        )
    parsed = [parse_host(host) for host in hosts]
    head_ip = parsed[0][1]
    image_kind = {"byog.accelerator": "gpu"}
    gpus = gpus_for(config, image_kind)
    device_requests = (
        []
        if gpus is None
        else [
            {
                "Driver": "",
                "Count": -1 if gpus == "all" else 0,
                "DeviceIDs": [] if gpus == "all" else list(gpus),
                "Capabilities": [["gpu"]],
            }
        ]
    )
    serve_argv = ["vllm", "serve", *vllm_serve_args(config, model, "127.0.0.1", serve_port)]
    if arg_value(serve_argv, "--distributed-executor-backend") is None:
        serve_argv += ["--distributed-executor-backend", "ray"]

    passed_through = {key: os.environ[key] for key in PASSTHROUGH_ENV if os.environ.get(key)}
    specs = []
    for rank, (base_url, node_ip) in enumerate(parsed):
        role: Literal["head", "worker"] = "head" if rank == 0 else "worker"
        ray = (
            f"ray start --block --head --port={RAY_PORT} --node-ip-address={node_ip}"
            if role == "head"
            else (f"ray start --block --address={head_ip}:{RAY_PORT} --node-ip-address={node_ip}")
        )
        env = {
            **server_env(config),
            "HF_HOME": CONTAINER_HF_HOME,
            **passed_through,
            **config.env,
            "VLLM_HOST_IP": node_ip,
        }
        labels = {**run_labels(run_id, name), "byog.node-rank": str(rank), "byog.node-role": role}
        run_kwargs = {
            "image": config.image,
            "name": container_name(run_id, f"{name}-node{rank}"),
            "entrypoint": ["/bin/bash", "-c"],
            "command": [ray],
            "environment": env,
            "volumes": {hf_cache: {"bind": CONTAINER_HF_HOME, "mode": "rw"}},
            "labels": labels,
            "network_mode": "host",  # Ray and NCCL talk node to node on the hosts' own addresses
            "ipc_mode": "host",
            "device_requests": device_requests,
            "detach": True,
        }
        specs.append(
            NodeSpec(
                rank=rank,
                role=role,
                docker_host=base_url,
                node_ip=node_ip,
                run_kwargs=run_kwargs,
                serve_argv=serve_argv if role == "head" else None,
                expected_nodes=len(hosts),
                gpus_per_node=per_node,
            )
        )
    return specs


def describe_launch(
    config: ServerConfig,
    model: PreparedModel,
    hosts: list[str] | None = None,
    *,
    name: str = "server",
    run_id: str = "plan",
    gpus_per_node: int = 4,
) -> list[str]:
    """Human-readable lines, one `docker` command per node and the serve step (for `byog plan`).

    Without hosts, placeholders ``ssh://USER@node<i>`` stand in, as many as the size needs.
    """
    hosts = hosts or placeholder_hosts(nodes_needed(config, gpus_per_node))
    if len(hosts) == 1:
        return [f"{name}: one node; the docker runtime launches it (no Ray cluster needed)"]
    specs = multinode_specs(config, model, hosts, name=name, run_id=run_id, gpus_per_node=gpus_per_node)
    world = config.tensor_parallel_size * config.data_parallel_size
    lines = [
        f"{name}: TP={config.tensor_parallel_size} DP={config.data_parallel_size} over {len(specs)} nodes x "
        f"{specs[0].gpus_per_node} GPUs = {world} GPUs, Ray cluster on {specs[0].node_ip}:{RAY_PORT}"
    ]
    for spec in specs:
        lines.append(f"  node {spec.rank} ({spec.role}) DOCKER_HOST={spec.docker_host}: {docker_run_line(spec)}")
    head = specs[0]
    lines.append(f"  wait until `ray status` on the head lists {len(specs)} nodes, then on the head:")
    lines.append(
        f"  DOCKER_HOST={head.docker_host} docker exec -d {head.run_kwargs['name']} {shlex.join(head.serve_argv or [])}"
    )
    lines.append(
        f"  endpoint: http://127.0.0.1:{SERVE_PORT} on {head.node_ip} (run byog there, or tunnel: ssh -L "
        f"{SERVE_PORT}:127.0.0.1:{SERVE_PORT} {head.node_ip})"
    )
    return lines


def docker_run_line(spec: NodeSpec) -> str:
    """The `docker run` equivalent of a spec's SDK call (secrets redacted)."""
    kw = spec.run_kwargs
    parts = ["docker", "run", "-d", "--name", kw["name"], "--network", kw["network_mode"], "--ipc", kw["ipc_mode"]]
    for request in kw["device_requests"]:
        parts += ["--gpus", "all" if request["Count"] == -1 else f'"device={",".join(request["DeviceIDs"])}"']
    for host_path, bind in kw["volumes"].items():
        parts += ["-v", f"{host_path}:{bind['bind']}:{bind['mode']}"]
    for key, value in redact_env(kw["environment"]).items():
        parts += ["-e", f"{key}={value}"]
    for key in ("byog.run", "byog.server", "byog.node-rank"):
        parts += ["--label", f"{key}={kw['labels'][key]}"]
    parts += ["--entrypoint", kw["entrypoint"][0], kw["image"], *kw["entrypoint"][1:], *kw["command"]]
    return shlex.join(parts)


def launch_multinode(
    specs: list[NodeSpec], ray_timeout_s: float = 600.0
) -> list[Any]:  # pragma: no cover - needs GPU trays
    """Run the specs: the head, the workers, wait for Ray to see every node, exec `vllm serve` on the head.

    Returns the containers (head first). NOT run in byog's tests: there are no trays here.
    """

    from docker.types import DeviceRequest

    containers = []
    try:
        for spec in specs:
            client = docker_client(base_url=spec.docker_host)
            kwargs = dict(spec.run_kwargs)
            kwargs["device_requests"] = [
                DeviceRequest(count=r["Count"], device_ids=r["DeviceIDs"], capabilities=r["Capabilities"])
                if r["DeviceIDs"]
                else DeviceRequest(count=r["Count"], capabilities=r["Capabilities"])
                for r in kwargs["device_requests"]
            ]
            containers.append(client.containers.run(**kwargs))
        head = containers[0]
        deadline = time.monotonic() + ray_timeout_s
        while time.monotonic() < deadline:
            code, out = head.exec_run(["ray", "status"])
            if code == 0 and out.decode().count("node_") >= len(specs):
                break
            time.sleep(5)
        else:
            raise UsageError(f"the Ray cluster did not reach {len(specs)} nodes within {ray_timeout_s:.0f} s")
        head.exec_run(specs[0].serve_argv, detach=True)
        return containers
    except BaseException:
        for container in containers:
            container.remove(force=True)
        raise
