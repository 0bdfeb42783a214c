"""The cpu-host image runs the host's own Python: its prefix mounted read-only into the container.

A Python installed outside the system directories (pyenv, uv, a conda prefix) is mounted whole:
its prefix holds the interpreter and the standard library. A virtual environment made from the
distribution's own Python (base prefix ``/usr``, as a stock Debian/Ubuntu user has) cannot mount
its base over the image's system, so only the venv is mounted and its ``bin/python`` link
resolves to the image's own interpreter: the root filesystem is debootstrapped from the same
Debian suite and carries its ``python3`` (docker/build-rootfs.sh), the same build as the host's.
That interpreter's C headers (``/usr/include/python3.X``) are mounted from the host too: torch's
inductor compiles a C++ module including ``Python.h`` at the first request of a TP > 1 server
(vLLM's compiled masked-embedding lookup), and the image carries no python3-dev.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

from byog.core.errors import EnvironmentProblem
from byog.images.engine import IMAGE_LABEL_SYSTEM_PYTHON

SYSTEM_PREFIXES = (Path("/"), Path("/usr"), Path("/usr/local"))


def system_python_headers() -> set[Path]:
    """The system interpreter's include directories, where the host has them (python3-dev): Debian
    splits pyconfig.h into /usr/include/<multiarch>/python3.X, which the first one includes."""
    include = Path(sysconfig.get_paths()["include"]).resolve()
    if not (include / "Python.h").is_file():
        return set()
    arch = include.parent / (sysconfig.get_config_var("MULTIARCH") or "-") / include.name
    return {include, arch} if arch.is_dir() else {include}


def host_python_volumes(labels: dict[str, str]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Read-only mounts that let the cpu-host image (its ``labels``) run this interpreter, and the
    entrypoint to use.

    byog's own package directory is mounted too because an editable install points outside the prefix.
    """
    prefix, base = Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()
    if prefix in SYSTEM_PREFIXES:
        raise EnvironmentProblem(
            f"the cpu-host image mounts the host's Python read-only, but this Python is the system's own ({prefix}), "
            "which cannot be mounted over the image's system: run byog from a virtual environment "
            "(scripts/install.sh makes one) or build the self-contained image with `byog image build --flavour cpu`"
        )
    if base in SYSTEM_PREFIXES:
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        carried = labels.get(IMAGE_LABEL_SYSTEM_PYTHON)
        if carried != version:
            raise EnvironmentProblem(
                f"this venv is made from the system's Python {version} ({base}), which the cpu-host image must carry "
                "itself, but it carries "
                f"{'Python ' + carried if carried else 'none (it was built before byog added it)'}: "
                "rebuild it with `byog image build --flavour cpu-host` (DEBIAN_SUITE picks the suite whose python3 "
                "matches), or make the venv from a Python installed elsewhere (pyenv, uv)"
            )
    paths = {prefix} | system_python_headers() if base in SYSTEM_PREFIXES else {prefix, base}
    package_dir = Path(__file__).resolve().parents[1]  # byog/
    if not any(package_dir.is_relative_to(path) for path in paths):
        paths.add(package_dir)
    volumes = {str(path): {"bind": str(path), "mode": "ro"} for path in sorted(paths)}
    return volumes, [sys.executable, "-m", "byog.images.vllm_entry", "serve"]
