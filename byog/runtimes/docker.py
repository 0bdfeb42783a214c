"""The `docker` runtime: one vLLM server per server config, in a container, through the docker SDK.

What a container gets (``byog.runtimes.container.container_spec``, pure data):
- the image's own entrypoint (`vllm serve` in the standard image) with the arguments of
  ``byog.runtimes.launch.vllm_serve_args`` — the same arguments every runtime passes;
- GPUs only for a GPU image (label ``byog.accelerator``) or when the server config asks
  (``gpus: all`` or a list of device ids); the CPU flavours run without a device request;
- ``ipc_mode=host`` (vLLM's shared memory between its processes), the HF cache mounted, a local
  model directory mounted read-only at the same path, ``HF_TOKEN`` passed through (and recorded
  only as ``<redacted>``);
- the port bound to 127.0.0.1: published from the container where the engine has a bridge, else
  (``--bridge=none`` engines, as in CI) the host network with vLLM listening on 127.0.0.1;
- labels naming the run, the server and the owning byog process, so a sweep at start removes
  containers whose owner died (SIGKILL leaves nothing else to clean up).

The ``cpu-host`` flavour (label ``byog.host-python=mount``) holds no Python: the host's Python
prefix and byog's source are mounted read-only and vLLM runs through ``byog.images.vllm_entry``,
exactly as the local runtime runs it.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

from byog.core.errors import ByogError, EnvironmentProblem, UsageError
from byog.images.engine import (
    IMAGE_LABEL_HOST_PYTHON,
    docker_client,
)
from byog.images.fingerprint import gpu_fingerprint, oci_arch
from byog.images.tags import IMAGE_REPO, build_hint
from byog.runtimes.cleanup import remove_container, sweep_orphans
from byog.runtimes.container import (
    HOST,
    ContainerSpec,
    container_spec,
    docker_run_argv,
    free_port,
    gpus_for,
    hf_cache_dir,
    run_id_of,
)
from byog.runtimes.identity import container_identity
from byog.runtimes.launch import redact_env
from byog.runtimes.record import (
    endpoint_after_start,
    gpus_seen,
    listen_of,
    probe_server,
    resolved_config,
    tail_file,
    utc_now,
    wait_for_health,
    write_server_record,
)
from byog.runtimes.registry import PORT, PlannedLaunch, register_runtime
from byog.schemas.plan import DockerConfig, ServerConfig
from byog.schemas.server import SERVER_START_MARKER, Endpoint, PreparedModel, ServerGpus, ServerRecord

PORT_ATTEMPTS = 3
PORT_CONFLICT_MARKERS = ("address already in use", "port is already allocated", "errno 98")
LOG_JOIN_S = 10.0


# --- engine side ---------------------------------------------------------------------------------


IMAGE_ID = re.compile(r"^sha256:[0-9a-f]{64}$")


def resolve_image(client: Any, ref: str) -> Any:
    """The image object; a missing byog image says how to build it, a missing registry image is pulled.

    ``ref`` is a tag, a RepoDigest (``repo@sha256:<manifest digest>``), an image id, or
    ``TAG@sha256:<image id>``: an image built here was never pushed, so it has no RepoDigest and its
    id is what pins it (``byog image inspect`` prints it).
    """
    from docker.errors import APIError, ImageNotFound

    try:
        image = client.images.get(ref)
    except ImageNotFound:
        image = _local_image_by_id(client, ref)
    if image is not None:
        check_image_platform(ref, image.attrs, client.info())
        return image
    if IMAGE_ID.match(ref):
        raise EnvironmentProblem(
            f"image {ref} is not on this Docker engine: an image id names a build of this engine (or one pulled "
            "into it); build it here (`byog image build`) or name the image by a pushed digest"
        )
    if ref.split(":")[0].split("@")[0] == IMAGE_REPO:
        raise EnvironmentProblem(f"image {ref} is not on this Docker engine: {build_hint(ref)}")
    try:
        pulled = client.images.pull(ref)
    except (APIError, ImageNotFound) as err:
        raise EnvironmentProblem(
            f"image {ref} is not on this Docker engine and pulling it failed ({_first_line(err)}): "
            "`docker pull` it where a registry is reachable, or build byog's image with `byog image build`"
        ) from None
    check_image_platform(ref, pulled.attrs, client.info())
    return pulled


def _local_image_by_id(client: Any, ref: str) -> Any:
    """The image whose id is the digest of ``TAG@sha256:<id>``, or None."""
    from docker.errors import ImageNotFound

    digest = ref.rpartition("@")[2]
    if "@" not in ref or not IMAGE_ID.match(digest):
        return None
    try:
        return client.images.get(digest)
    except ImageNotFound:
        return None


def run_ref(ref: str, image: Any) -> str:
    """What ``containers.run`` is given: ``ref``, except ``TAG@<image id>``, which the engine knows by the id only."""
    return str(image.id) if "@" in ref and ref.rpartition("@")[2] == image.id else ref


def check_image_platform(ref: str, image_attrs: dict[str, Any], engine_info: dict[str, Any]) -> None:
    """Refuse an image of another architecture than the engine's host, before any container starts."""
    image_arch, host_arch = image_attrs.get("Architecture"), engine_info.get("Architecture")
    if not image_arch or not host_arch or oci_arch(image_arch) == oci_arch(host_arch):
        return
    raise EnvironmentProblem(
        f"image {ref} is linux/{oci_arch(image_arch)} but this Docker engine's host is linux/{oci_arch(host_arch)}: "
        f"build it for this host (`byog image build --platform linux/{oci_arch(host_arch)}`)"
    )


def image_record(ref: str, image: Any) -> dict[str, Any]:
    attrs = image.attrs
    return {
        "image": ref,
        "image_id": image.id,
        "repo_digests": list(attrs.get("RepoDigests") or []),
        "image_labels": dict((attrs.get("Config") or {}).get("Labels") or {}),
        "image_architecture": oci_arch(attrs["Architecture"]) if attrs.get("Architecture") else None,
    }


def engine_has_bridge(client: Any) -> bool:
    return bool(client.networks.list(names=["bridge"]))


def _first_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text[:200]


class _LogFollower(threading.Thread):
    """Copies the container's stdout+stderr into server.log as it arrives; ends with the container."""

    def __init__(self, container: Any, path: Path) -> None:
        super().__init__(name=f"byog-log-{container.name}", daemon=True)
        self.container = container
        self.path = path

    def run(self) -> None:
        try:
            with self.path.open("ab") as log:
                for chunk in self.container.logs(stream=True, follow=True, stdout=True, stderr=True):
                    log.write(chunk)
                    log.flush()
        except Exception as err:  # the container went away under us: the log ends here
            with self.path.open("ab") as log:
                log.write(f"\n==== byog: log stream ended: {_first_line(err)}\n".encode())


class DockerServer:
    """A vLLM server in a container; ``restart`` removes it and starts an identical one."""

    def __init__(self, name: str, config: DockerConfig, model: PreparedModel, server_dir: Path, client: Any) -> None:
        if not config.image:  # a copy the plan's validation did not see
            raise UsageError(f"server '{name}' uses the docker runtime but names no 'image'")
        self.name = name
        self.config = config
        self.model = model
        self.server_dir = server_dir
        self.client = client
        self.log_path = server_dir / "server.log"
        self.record_path = server_dir / "server.json"
        self.run_id = run_id_of(server_dir)
        self.image = resolve_image(client, config.image)
        self.image_ref = run_ref(config.image, self.image)
        self.image_info = image_record(config.image, self.image)
        self.bridge = engine_has_bridge(client)
        self.spec = self._spec(free_port())
        self.endpoint = Endpoint(base_url=self.base_url, model=model.served_name, tokenizer=model.tokenizer)
        self.starts: list[dict[str, Any]] = []
        self._container: Any = None
        self._follower: _LogFollower | None = None
        self.identity: dict[str, Any] | None = None

    def _spec(self, host_port: int) -> ContainerSpec:
        return container_spec(
            self.name,
            self.config,
            self.model,
            image_ref=self.image_ref,
            image_labels=self.image_info["image_labels"],
            run_id=self.run_id,
            host_port=host_port,
            bridge=self.bridge,
        )

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.spec.host_port}"

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> DockerServer:
        self.server_dir.mkdir(parents=True, exist_ok=True)
        hf_cache_dir().mkdir(parents=True, exist_ok=True)
        for attempt in range(PORT_ATTEMPTS):
            try:
                self._start_once()
                break
            except _PortTaken:
                self.stop()
                if attempt == PORT_ATTEMPTS - 1:
                    raise ByogError(
                        f"server '{self.name}': {PORT_ATTEMPTS} ports in a row were taken; last log "
                        f"lines:\n{self.log_tail()}"
                    ) from None
                self.spec = self._spec(free_port())
            except BaseException:
                self.stop()
                raise
        if self.identity is None:  # a restart runs the same image on the same files
            self.identity = container_identity(self._container, self._python(), self.model, self.image_info)
        self._write_record()
        return self

    def _python(self) -> str:
        """The container's interpreter: the host's when the image mounts it, else the image's python3."""
        if self.image_info["image_labels"].get(IMAGE_LABEL_HOST_PYTHON) == "mount":
            return sys.executable
        return "python3"

    def _start_once(self) -> None:
        from docker.errors import APIError

        self._remove_leftover()
        with self.log_path.open("ab") as log:
            log.write(
                f"\n{SERVER_START_MARKER} '{self.name}' at {utc_now()} in {self.image_ref}: "
                f"{' '.join(self.spec.command)}\n".encode()
            )
        started_at = utc_now()
        try:
            self._container = self.client.containers.run(**self.spec.run_kwargs())
        except APIError as err:
            if any(marker in str(err).lower() for marker in PORT_CONFLICT_MARKERS):
                raise _PortTaken() from None
            raise ByogError(
                f"server '{self.name}': the Docker engine refused to start {self.image_ref}: {_first_line(err)}"
            ) from None
        self._follower = _LogFollower(self._container, self.log_path)
        self._follower.start()
        try:
            ready_s = wait_for_health(
                self.base_url,
                name=self.name,
                alive=self.alive,
                log_tail=self.log_tail,
                timeout_s=self.config.startup_timeout_s,
                log_path=self.log_path,
            )
        except ByogError:
            if any(marker in self.log_tail(60).lower() for marker in PORT_CONFLICT_MARKERS):
                raise _PortTaken() from None
            raise
        self.starts.append(
            {"started_at": started_at, "ready_after_s": round(ready_s, 3), "container_id": self._container.id}
        )

    def _remove_leftover(self) -> None:
        """A container of the same name (an earlier attempt, a crashed run resumed) is removed first."""
        from docker.errors import NotFound

        with contextlib.suppress(NotFound):
            remove_container(self.client.containers.get(self.spec.name))

    def _write_record(self) -> None:
        probe = probe_server(self.base_url)
        self.endpoint = endpoint_after_start(self.base_url, self.model, self.config, self.spec.command, probe)
        entrypoint = self.spec.entrypoint or list((self.image.attrs.get("Config") or {}).get("Entrypoint") or [])
        write_server_record(
            self.record_path,
            ServerRecord(
                name=self.name,
                runtime="docker",
                argv=[*entrypoint, *self.spec.command],
                env=redact_env(self.spec.environment),
                base_url=self.base_url,
                model=self.model.served_name,
                model_path=self.model.path,
                tensor_parallel_size=self.config.tensor_parallel_size,
                max_model_len=self.endpoint.max_model_len,
                **self.image_info,
                container=self.spec.record(),
                engine=_engine_summary(self.client),
                starts=self.starts,
                identity=self.identity,
                listen=listen_of(self.spec.command, self.spec.environment),
                resolved=resolved_config(self.base_url, self.log_path),
                hardware=self._gpus(),
                **probe,
            ),
        )

    def _gpus(self) -> ServerGpus:
        """The host's GPUs the container was given (its device request), none for a CPU image."""
        chosen = gpus_for(self.config, self.image_info["image_labels"])
        if chosen is None:
            return ServerGpus(unknown="the container was given no GPU")
        return gpus_seen(gpu_fingerprint(), None if chosen == "all" else ",".join(chosen))

    def alive(self) -> bool:
        from docker.errors import NotFound

        if self._container is None:
            return False
        try:
            self._container.reload()
        except NotFound:
            return False
        return self._container.status in ("created", "running")

    def log_tail(self, lines: int = 30) -> str:
        follower = self._follower
        if follower is not None and follower.is_alive() and not self.alive():
            follower.join(3.0)  # the container has exited: let its last lines reach the file
        return tail_file(self.log_path, lines)

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        from docker.errors import NotFound

        container, self._container = self._container, None
        if container is None:
            # Interrupted between create and start: the container exists but was never handed back.
            try:
                container = self.client.containers.get(self.spec.name)
            except NotFound:
                container = None
        if container is not None:
            remove_container(container)
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.join(LOG_JOIN_S)

    def __enter__(self) -> DockerServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _PortTaken(Exception):
    """vLLM (or the engine) could not bind the chosen port: pick another."""


def _engine_summary(client: Any) -> dict[str, Any]:
    try:
        version = client.version()
    except Exception:  # recorded for context only
        return {}
    return {"version": version.get("Version"), "api_version": version.get("ApiVersion"), "os": version.get("Os")}


@register_runtime("docker")
class DockerRuntime:
    """Launches server configs with ``runtime: docker``; sweeps orphaned byog containers once."""

    def __init__(self, client: Any = None) -> None:
        self._client = client
        self._swept = False

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def planned(self, name: str, config: ServerConfig, model: PreparedModel, *, cpu_build: bool) -> PlannedLaunch:
        """The container ``launch`` would run, from the same ``container_spec`` (bridged; the image's labels,
        which can turn the GPU request off for a CPU image, are read only at launch)."""
        del cpu_build  # the image's label says, at launch
        if not isinstance(config, DockerConfig):
            raise UsageError(f"server '{name}' asks for the '{config.runtime}' runtime, not 'docker'")
        spec = container_spec(
            name, config, model, image_ref=config.image, image_labels={}, run_id="RUN_ID", host_port=0, bridge=True
        )
        argv = docker_run_argv(spec, PORT)
        return PlannedLaunch(argv, redact_env(spec.environment), shlex.join(argv))

    def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> DockerServer:
        if not isinstance(config, DockerConfig):
            raise UsageError(f"server '{name}' asks for the '{config.runtime}' runtime, not 'docker'")
        if not self._swept:
            sweep_orphans(self.client)
            self._swept = True
        return DockerServer(name, config, model, server_dir, self.client).start()
