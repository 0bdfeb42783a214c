"""The ``docker`` node runtime: one container per node, processes exec'd into it, through the SDK.

Each node is a container of the server's image that only holds the node open (``sleep
infinity``): host network (nodes and clients meet on the hosts' own addresses), ``ipc=host``,
the node's GPUs as a device request (none for a CPU image), the HF cache and a local model
directory mounted as the docker runtime mounts them, byog's labels plus ``byog.node-rank``.
The launcher's steps (``vllm serve``, ``ray start``) are ``exec``s into that container, their
output streamed into the node's log file by a thread; an exec is alive while the engine says it
is running. Closing the node removes the container, and with it everything that ran inside:
nothing of a node can outlive it. The docker runtime's orphan sweep (labels naming a dead owner)
removes the containers of a byog that was SIGKILLed.

Nodes on one engine share ``/dev/shm`` (``ipc=host``), so vLLM counts them as one machine and
joins their ranks through shared memory plus ZeroMQ ``ipc://`` sockets in ``VLLM_RPC_BASE_PATH``
(default ``/tmp``, private to each container): those sockets must be shared as the memory is, or
the readers on the other containers never reach the writer's socket and the TP group never forms
(it waits forever in ``MessageQueue.wait_until_ready``). Every node of a server on one engine
mounts one host directory there (``rpc_bind``).

One engine per node: ``hosts`` name them (``ssh://user@host`` for docker over SSH); without
hosts every node is a container on this machine's engine (a test, or one host split in nodes).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import byog
from byog.core.errors import ByogError
from byog.images.engine import IMAGE_LABEL_ACCELERATOR, IMAGE_LABEL_HOST_PYTHON, docker_client
from byog.images.host_python import host_python_volumes
from byog.runtimes.cleanup import remove_container, sweep_orphans
from byog.runtimes.container import CONTAINER_HF_HOME, PASSTHROUGH_ENV, container_name, hf_cache_dir, run_labels
from byog.runtimes.docker import image_record, resolve_image, run_ref
from byog.runtimes.nodes import RUN_TIMEOUT_S, node_env
from byog.runtimes.ssh_nodes import parse_host
from byog.schemas.server import PreparedModel

LOG_JOIN_S = 10.0
KEEPER = ["sleep", "infinity"]
RPC_DIR_ENV = "VLLM_RPC_BASE_PATH"  # where vLLM binds its ZeroMQ ipc:// sockets
CONTAINER_RPC_DIR = "/tmp/byog-rpc"  # short: a Unix socket path (this + a uuid) has ~107 bytes
HOST_RPC_ROOT = "/tmp"  # on the engine's host (docker creates a missing bind source)


def rpc_bind(run_id: str, server: str) -> tuple[str, dict[str, str]]:
    """The host directory every node of one server on one engine shares as VLLM_RPC_BASE_PATH."""
    host_dir = f"{HOST_RPC_ROOT}/{container_name(run_id, server)}-rpc"
    return host_dir, {"bind": CONTAINER_RPC_DIR, "mode": "rw"}


class DockerProc:
    """One exec in a node's container; its output goes to the log by a follower thread."""

    def __init__(self, label: str, client: Any, exec_id: str, log_path: Path) -> None:
        self.label = label
        self.client = client
        self.exec_id = exec_id
        self._follower = threading.Thread(target=self._follow, args=(log_path,), daemon=True, name=f"byog-exec-{label}")
        self._follower.start()

    def _follow(self, log_path: Path) -> None:
        with log_path.open("ab") as log:
            try:
                for chunk in self.client.api.exec_start(self.exec_id, stream=True, detach=False):
                    log.write(chunk)
                    log.flush()
            except Exception as err:  # the container went away under the stream: the log ends here
                log.write(f"\n==== byog: exec stream ended: {' '.join(str(err).split())[:200]}\n".encode())

    def _inspect(self) -> dict[str, Any]:
        try:
            return dict(self.client.api.exec_inspect(self.exec_id))
        except Exception:  # the container (and so the exec) is gone
            return {"Running": False, "ExitCode": None}

    def alive(self) -> bool:
        return bool(self._inspect().get("Running"))

    def stop(self, grace_s: float = 0.0) -> None:  # noqa: ARG002 (NodeProc.stop)
        """Nothing to signal one by one: closing the node removes the container and all in it."""
        self._follower.join(0 if self.alive() else LOG_JOIN_S)

    def record(self) -> dict[str, Any]:
        found = self._inspect()
        return {"exec_id": self.exec_id, "pid_on_host": found.get("Pid"), "returncode": found.get("ExitCode")}


class DockerNode:
    """A node's container. Its GPUs are its device request (numbered from 0 inside), so the steps
    get no CUDA_VISIBLE_DEVICES."""

    def __init__(
        self,
        rank: int,
        client: Any,
        engine: str,
        address: str,
        gpus: list[int],
        marker: str,
        run_kwargs: dict[str, Any],
    ) -> None:
        self.rank = rank
        self.client = client
        self.engine = engine
        self.address = address
        self.gpus = gpus
        self.marker = marker
        self.run_kwargs = run_kwargs
        self.container: Any = None
        self.procs: list[DockerProc] = []

    def start(self) -> DockerNode:
        from docker.errors import APIError, NotFound

        with contextlib.suppress(NotFound):  # a leftover of a crashed run
            remove_container(self.client.containers.get(self.run_kwargs["name"]))
        try:
            self.container = self.client.containers.run(**self.run_kwargs)
        except APIError as err:
            raise ByogError(
                f"node {self.rank}: the Docker engine at {self.engine} refused to start "
                f"{self.run_kwargs['image']}: {' '.join(str(err).split())[:200]}"
            ) from None
        return self

    def spawn(self, label: str, argv: list[str], env: dict[str, str], log_path: Path) -> DockerProc:
        exec_id = self.client.api.exec_create(
            self.container.id,
            argv,
            environment=node_env(env, self.marker, []),
            stdout=True,
            stderr=True,
            stdin=False,
            tty=False,
        )["Id"]
        proc = DockerProc(label, self.client, exec_id, log_path)
        self.procs.append(proc)
        return proc

    def run(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        timeout_s: float = RUN_TIMEOUT_S,  # noqa: ARG002 (Node.run; docker exec takes no timeout)
    ) -> tuple[int, str]:
        result = self.container.exec_run(argv, environment=node_env(env or {}, self.marker, []), demux=False)
        return int(result.exit_code), (result.output or b"").decode(errors="replace")

    def close(self) -> None:
        if self.container is not None:
            remove_container(self.container, grace_s=0)
        for proc in self.procs:
            proc.stop()
        self.procs = []
        if self.engine == "local":  # the sockets of a dead group; a remote host's /tmp keeps its empty dir
            shutil.rmtree(self.rpc_dir, ignore_errors=True)

    @property
    def rpc_dir(self) -> str:
        volumes: dict[str, dict[str, str]] = self.run_kwargs["volumes"]
        return next(host for host, bind in volumes.items() if bind["bind"] == CONTAINER_RPC_DIR)

    def record(self) -> dict[str, Any]:
        return {
            "runtime": "docker",
            "engine": self.engine,
            "gpus": self.gpus,
            "marker": self.marker,
            "container": {
                "name": self.run_kwargs["name"],
                "id": getattr(self.container, "id", None),
                "network_mode": "host",
                "ipc_mode": "host",
                "labels": self.run_kwargs["labels"],
            },
        }


def _import_path_volumes(mounted: set[str]) -> dict[str, dict[str, str]]:
    """Directories on this Python's import path outside what is mounted already (PYTHONPATH, a .pth
    pointing elsewhere), read-only at their own paths: the node's Python imports what byog does."""
    out: dict[str, dict[str, str]] = {}
    for entry in sys.path:
        path = Path(entry).resolve() if entry else None
        if path is None or not path.is_dir() or path.parts[:2] in (("/", "usr"), ("/", "lib"), ("/", "etc")):
            continue
        if any(path.is_relative_to(Path(m)) for m in [*mounted, *out]):
            continue
        out[str(path)] = {"bind": str(path), "mode": "ro"}
    return out


def mounted_python_path(image_attrs: dict[str, Any], byog_parent: Path) -> str:
    """PYTHONPATH of a node that mounts this Python: the image's own first (a vLLM wheel layered over
    cpu-host is there), then the directory byog is imported from."""
    env = (image_attrs.get("Config") or {}).get("Env") or []
    own = next((entry.split("=", 1)[1] for entry in env if entry.startswith("PYTHONPATH=")), "")
    return ":".join(p for p in [*own.split(":"), str(byog_parent)] if p)


class DockerNodes:
    """Opens one container per node of ``image``; the image decides the Python the steps run."""

    kind = "docker"
    # The engine reports a killed node's exec ended ~0.2 s after the kill, while the API server's
    # requests fail at once (its peer's connection resets): the point must still name the node.
    death_lag_s = 5.0

    def __init__(
        self,
        image: str,
        model: PreparedModel,
        *,
        name: str,
        run_id: str,
        env: dict[str, str] | None = None,
        gpus_requested: bool | None = None,
    ) -> None:
        self.model = model
        self.name = name
        self.run_id = run_id
        self._clients: dict[str, Any] = {}
        self._swept: set[str] = set()
        self.passthrough = {k: os.environ[k] for k in PASSTHROUGH_ENV if os.environ.get(k)}
        self.extra_env = dict(env or {})
        self.gpus_requested = gpus_requested
        resolved = resolve_image(self.client(None), image)
        self.image = run_ref(image, resolved)
        labels = image_record(image, resolved)["image_labels"]
        self.image_labels = labels
        self.cpu_image = labels.get(IMAGE_LABEL_ACCELERATOR) == "cpu"
        self.cpu_build = self.cpu_image
        self.mount_python = labels.get(IMAGE_LABEL_HOST_PYTHON) == "mount"
        self.python = sys.executable if self.mount_python else "python3"
        if self.mount_python:  # the mounted byog is importable from where it lies, editable install or not
            byog_parent = Path(byog.__file__).resolve().parents[1]
            self.extra_env.setdefault("PYTHONPATH", mounted_python_path(resolved.attrs, byog_parent))

    def client(self, engine: str | None) -> Any:
        key = engine or ""
        if key not in self._clients:
            self._clients[key] = docker_client(base_url=engine) if engine else docker_client()
        if key not in self._swept:
            sweep_orphans(self._clients[key])
            self._swept.add(key)
        return self._clients[key]

    def _volumes(self) -> dict[str, dict[str, str]]:
        rpc_host, rpc = rpc_bind(self.run_id, self.name)
        volumes = {str(hf_cache_dir()): {"bind": CONTAINER_HF_HOME, "mode": "rw"}, rpc_host: rpc}
        for local in {self.model.path, self.model.tokenizer}:
            if local and Path(local).is_absolute() and Path(local).exists():
                volumes[str(Path(local))] = {"bind": str(Path(local)), "mode": "ro"}
        if self.mount_python:
            volumes.update(host_python_volumes(self.image_labels)[0])
            volumes.update(_import_path_volumes(set(volumes)))
        return volumes

    def open(self, rank: int, host: str | None, gpus: list[int], marker: str) -> DockerNode:
        engine, address = parse_host(host) if host else (None, "127.0.0.1")
        run_kwargs: dict[str, Any] = {
            "image": self.image,
            "name": container_name(self.run_id, f"{self.name}-node{rank}"),
            "entrypoint": KEEPER[:1],
            "command": KEEPER[1:],
            "environment": {
                "HF_HOME": CONTAINER_HF_HOME,
                RPC_DIR_ENV: CONTAINER_RPC_DIR,
                **self.passthrough,
                **self.extra_env,
            },
            "volumes": self._volumes(),
            "labels": {**run_labels(self.run_id, self.name), "byog.node-rank": str(rank)},
            "network_mode": "host",
            "ipc_mode": "host",
            "detach": True,
        }
        if gpus and not self.cpu_image:
            from docker.types import DeviceRequest

            run_kwargs["device_requests"] = [DeviceRequest(device_ids=[str(g) for g in gpus], capabilities=[["gpu"]])]
        hf_cache_dir().mkdir(parents=True, exist_ok=True)
        return DockerNode(rank, self.client(engine), engine or "local", address, gpus, marker, run_kwargs).start()
