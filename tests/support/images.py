"""The cpu-host image for the docker tests: built when missing, or when it cannot run this Python
(an image from before it carried the system python3 that a venv of /usr/bin/python3 needs)."""

from __future__ import annotations

from typing import Any

from byog.core.errors import EnvironmentProblem
from byog.images.build import build_image
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
