"""The cpu-host image for the docker tests: built when missing, or when it cannot run this Python
(an image from before it carried the system python3 that a venv of /usr/bin/python3 needs)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from byog.core.errors import EnvironmentProblem
from byog.images.build import build_image
from byog.images.engine import docker_client
from byog.images.host_python import host_python_volumes
from byog.images.tags import default_tag


def cpu_host_image(client: Any) -> str:
    from docker.errors import ImageNotFound

    tag = default_tag("cpu-host")
    try:
        host_python_volumes(client.images.get(tag).labels or {})
        return tag
    except (ImageNotFound, EnvironmentProblem):
        result = build_image("cpu-host", log=lambda line: None)
        print(f"built {result.tag} in {result.build_s:.1f} s ({result.size_bytes / 1e6:.0f} MB): {result.steps_s}")
        return result.tag


def docker_client_or_skip() -> Any:
    """The Docker engine's client; no engine skips the test, or fails it where CI requires Docker."""
    try:
        return docker_client()
    except EnvironmentProblem as err:
        if os.environ.get("BYOG_REQUIRE_DOCKER") == "1":
            pytest.fail(str(err))
        pytest.skip(str(err))
