"""What a server's container gets, as pure data (``container_spec``), so a unit test can read it."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from byog.core.paths import LAUNCH_PREFIX
from byog.images.engine import (
    IMAGE_LABEL_ACCELERATOR,
    IMAGE_LABEL_HOST_PYTHON,
    LABEL_MANAGED,
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    LABEL_RUN,
    LABEL_SERVER,
)
from byog.images.host_python import host_python_volumes
from byog.runtimes.launch import SECRET_ENV, redact_env, server_env, vllm_serve_args
from byog.schemas.plan import DockerConfig
from byog.schemas.server import PreparedModel

HOST = "127.0.0.1"


CONTAINER_PORT = 8000  # vLLM's port inside a bridged container


CONTAINER_HF_HOME = "/root/.cache/huggingface"  # where the official vLLM image looks


# Passed through from byog's environment when set; values of secrets never reach a record.
PASSTHROUGH_ENV = (*sorted(SECRET_ENV), "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


@dataclass(frozen=True)
class ContainerSpec:
    """The arguments of one ``containers.run``; ``record()`` is the JSON a server.json keeps."""

    image: str
    name: str
    command: list[str]
    entrypoint: list[str] | None
    environment: dict[str, str]
    volumes: dict[str, dict[str, str]]
    labels: dict[str, str]
    network_mode: str | None
    ports: dict[str, tuple[str, int]] | None
    gpus: str | list[str] | None  # "all", device ids, or None (no device request)
    ipc_mode: str = "host"
    host_port: int = 0
    container_host: str = HOST  # the --host vLLM listens on inside the container
    extra: dict[str, Any] = field(default_factory=dict)

    def run_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "image": self.image,
            "name": self.name,
            "command": self.command,
            "environment": self.environment,
            "volumes": self.volumes,
            "labels": self.labels,
            "ipc_mode": self.ipc_mode,
            "detach": True,
            "stdin_open": False,
            "tty": False,
        }
        if self.entrypoint is not None:
            kwargs["entrypoint"] = self.entrypoint
        if self.network_mode:
            kwargs["network_mode"] = self.network_mode
        if self.ports:
            kwargs["ports"] = self.ports
        if self.gpus is not None:
            from docker.types import DeviceRequest

            if self.gpus == "all":
                kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
            else:
                kwargs["device_requests"] = [DeviceRequest(device_ids=list(self.gpus), capabilities=[["gpu"]])]
        return kwargs

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "entrypoint": self.entrypoint,
            "command": self.command,
            "environment": redact_env(self.environment),
            "volumes": self.volumes,
            "labels": self.labels,
            "network_mode": self.network_mode or "bridge",
            "ports": {k: list(v) for k, v in (self.ports or {}).items()},
            "ipc_mode": self.ipc_mode,
            "gpus": self.gpus,
            "host_port": self.host_port,
        }


def docker_run_argv(spec: ContainerSpec, host_port: str) -> list[str]:
    """The ``docker run`` command line of ``spec`` (what ``byog plan`` shows; byog itself starts it through
    the SDK with ``run_kwargs``), the published port shown as ``host_port``, secrets redacted."""
    argv = ["docker", "run", "--detach", "--name", spec.name, "--ipc", spec.ipc_mode]
    if spec.gpus == "all":
        argv += ["--gpus", "all"]
    elif spec.gpus is not None:
        argv += ["--gpus", f"device={','.join(spec.gpus)}"]
    if spec.network_mode:
        argv += ["--network", spec.network_mode]
    for inside, (host, _) in (spec.ports or {}).items():
        argv += ["-p", f"{host}:{host_port}:{inside.split('/')[0]}"]
    for key, value in sorted(redact_env(spec.environment).items()):
        argv += ["-e", f"{key}={value}"]
    for source, bind in sorted(spec.volumes.items()):
        argv += ["-v", f"{source}:{bind['bind']}:{bind['mode']}"]
    if spec.entrypoint:
        argv += ["--entrypoint", spec.entrypoint[0]]
    return [*argv, spec.image, *(spec.entrypoint or [])[1:], *spec.command]


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def hf_cache_dir() -> Path:
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"])
    return Path.home() / ".cache" / "huggingface"


def gpus_for(config: DockerConfig, image_labels: dict[str, str]) -> str | list[str] | None:
    """The device request: the server config's choice, else all GPUs for a GPU image, none for a CPU one."""
    chosen = config.gpus
    if chosen == "none":
        return None
    if chosen == "all":
        return "all"
    if isinstance(chosen, list):
        return [str(device) for device in chosen] if chosen else None
    return None if image_labels.get(IMAGE_LABEL_ACCELERATOR) == "cpu" else "all"


def container_name(run_id: str, server: str) -> str:
    allowed = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in f"byog-{run_id}-{server}")
    return allowed[:120]


def run_labels(run_id: str, server: str) -> dict[str, str]:
    return {
        LABEL_MANAGED: "1",
        LABEL_RUN: run_id,
        LABEL_SERVER: server,
        LABEL_OWNER_PID: str(os.getpid()),
        LABEL_OWNER_HOST: socket.gethostname(),
    }


def container_spec(
    name: str,
    config: DockerConfig,
    model: PreparedModel,
    *,
    image_ref: str,
    image_labels: dict[str, str],
    run_id: str,
    host_port: int,
    bridge: bool,
    environ: dict[str, str] | None = None,
) -> ContainerSpec:
    """Everything `containers.run` needs for one server config: no engine is touched here."""
    environ = dict(os.environ) if environ is None else environ
    if bridge:
        listen, network_mode, ports = "0.0.0.0", None, {f"{CONTAINER_PORT}/tcp": (HOST, host_port)}
        port_inside = CONTAINER_PORT
    else:
        listen, network_mode, ports = HOST, "host", None
        port_inside = host_port
    command = vllm_serve_args(config, model, listen, port_inside)
    cpu_build = image_labels.get(IMAGE_LABEL_ACCELERATOR) == "cpu"
    env = {**server_env(config, cpu_build=cpu_build), "HF_HOME": CONTAINER_HF_HOME}
    env.update({key: environ[key] for key in PASSTHROUGH_ENV if environ.get(key)})
    env.update(config.env)  # the plan's own env wins over byog's defaults and pass-through

    volumes: dict[str, dict[str, str]] = {str(hf_cache_dir()): {"bind": CONTAINER_HF_HOME, "mode": "rw"}}
    for local in {model.path, model.tokenizer}:
        if local and Path(local).is_absolute() and Path(local).exists():
            volumes[str(Path(local))] = {"bind": str(Path(local)), "mode": "ro"}
    entrypoint = None
    if image_labels.get(IMAGE_LABEL_HOST_PYTHON) == "mount":
        python_volumes, entrypoint = host_python_volumes(image_labels)
        volumes.update(python_volumes)
    return ContainerSpec(
        image=image_ref,
        name=container_name(run_id, name),
        command=command,
        entrypoint=entrypoint,
        environment=env,
        volumes=volumes,
        labels=run_labels(run_id, name),
        network_mode=network_mode,
        ports=ports,
        gpus=gpus_for(config, image_labels),
        host_port=host_port,
        container_host=listen,
    )


def run_id_of(server_dir: Path) -> str:
    """servers/<name>[/launch-<r>] lives in runs/<id>/: the run id is the folder above ``servers``."""
    path = server_dir.resolve()
    if path.name.startswith(LAUNCH_PREFIX) and path.parent.parent.name == "servers":
        path = path.parent
    return path.parent.parent.name or "adhoc"
