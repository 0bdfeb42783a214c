"""``byog image inspect``: id, RepoDigests, labels and the vLLM version inside an image."""

from __future__ import annotations

import os
import re
import socket
from typing import Any

from byog.core.errors import EnvironmentProblem
from byog.images.engine import (
    IMAGE_LABEL_HOST_PYTHON,
    IMAGE_LABEL_VLLM_VERSION,
    LABEL_MANAGED,
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    docker_client,
)
from byog.images.fingerprint import oci_arch
from byog.images.host_python import host_python_volumes
from byog.images.tags import IMAGE_REPO, build_hint


def inspect_image(ref: str, *, probe_vllm: bool = True) -> dict[str, Any]:
    """Id, RepoDigests, labels, size, and the vLLM version inside (run in a throwaway container)."""
    from docker.errors import ImageNotFound

    client = docker_client()
    try:
        image = client.images.get(ref)
    except ImageNotFound:
        hint = (
            build_hint(ref)
            if ref.startswith(IMAGE_REPO + ":")
            else "`docker pull` it, or build byog's image with `byog image build`"
        )
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
        "platform": f"{attrs.get('Os') or 'linux'}/{oci_arch(attrs['Architecture'])}"
        if attrs.get("Architecture")
        else None,
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

    from docker.errors import APIError, ContainerError

    volumes: dict[str, dict[str, str]] = {}
    python = "python3"
    if labels.get(IMAGE_LABEL_HOST_PYTHON) == "mount":
        volumes, entry = host_python_volumes(labels)
        python = entry[0]
    try:
        output = client.containers.run(
            ref,
            entrypoint=[python, "-c", PROBE_CODE],
            volumes=volumes,
            network_mode="none",
            remove=True,
            labels={LABEL_MANAGED: "1", LABEL_OWNER_PID: str(os.getpid()), LABEL_OWNER_HOST: socket.gethostname()},
            environment={"HF_HUB_OFFLINE": "1"},
            stdout=True,
            stderr=False,
        )
    except (APIError, ContainerError):
        return None
    match = re.search(r"BYOG_VLLM_VERSION=(\S+)", output.decode(errors="replace"))
    return match.group(1) if match else None
