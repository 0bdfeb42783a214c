"""The Docker engine as byog sees it: one client, one sentence when there is none.

The docker SDK is imported here, lazily, so `byog --help` and the local runtime never load it.
Labels that mark what byog started live here too: the runtime sets them, the orphan sweep and
the tests look for them.
"""

from __future__ import annotations

import os
from typing import Any

from byog.core.errors import EnvironmentProblem

# Every container byog starts carries these labels (the values say which run and server).
LABEL_MANAGED = "byog.managed"
LABEL_RUN = "byog.run"
LABEL_SERVER = "byog.server"
LABEL_OWNER_PID = "byog.owner-pid"
LABEL_OWNER_HOST = "byog.owner-host"

# Image labels byog writes at build time and reads at launch time.
IMAGE_LABEL_VERSION = "byog.version"
IMAGE_LABEL_FLAVOUR = "byog.flavour"
IMAGE_LABEL_ACCELERATOR = "byog.accelerator"  # "gpu" or "cpu": GPUs are requested only for "gpu"
IMAGE_LABEL_BASE = "byog.base"  # the base image reference, pinned by digest (or the rootfs tarball hash)
IMAGE_LABEL_HOST_PYTHON = "byog.host-python"  # "mount": the image runs the host's Python, mounted read-only
IMAGE_LABEL_SYSTEM_PYTHON = "byog.system-python"  # "3.11": the distribution Python the image carries (venvs of it run)
IMAGE_LABEL_VLLM_VERSION = "byog.vllm-version"
START_ENGINE_HINT = "start one with scripts/start-dockerd.sh, or point DOCKER_HOST at a running engine"


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def docker_client(base_url: str | None = None, timeout_s: int = 120) -> Any:
    """A docker SDK client that has answered a ping; EnvironmentProblem (exit 3) when no engine does."""
    try:
        from docker.errors import DockerException

        import docker
    except ImportError:
        raise EnvironmentProblem("the docker runtime needs the docker SDK: pip install 'byog[docker]'") from None
    where = base_url or engine_address()
    try:
        if base_url:
            client = docker.DockerClient(base_url=base_url, timeout=timeout_s)
        else:
            client = docker.from_env(timeout=timeout_s)
        client.ping()
    except DockerException as err:
        raise EnvironmentProblem(f"no Docker engine answers at {where}: {START_ENGINE_HINT} ({_short(err)})") from None
    return client


def _short(err: BaseException, limit: int = 160) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
