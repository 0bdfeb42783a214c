"""scripts/install.sh's refusals: one sentence, a non-zero exit, nothing half-made (issue 20).

The interpreter is a stand-in for a Debian python3 without the python3-venv package: it passes the
version check and fails `-m venv` the way CPython's venv does without ensurepip. The success path is
CI itself (`.ci/run` installs into a fresh venv of /usr/bin/python3)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

NO_ENSUREPIP = """#!/usr/bin/env bash
case "$*" in
  *"version_info < (3, 10)"*) exit 0 ;;
  *"print("*) echo 3.11 ;;
  "-m venv "*) mkdir -p "$3/bin"; echo "Error: Command '[...]' returned non-zero exit status 1." >&2
               echo "The virtual environment was not created successfully" \
                 "because ensurepip is not available." >&2; exit 1 ;;
  *) exit 2 ;;
esac
"""


def _install(tmp_path: Path, *args: str, python: Path | None = None) -> subprocess.CompletedProcess[str]:
    path = ":".join(
        p for p in os.environ["PATH"].split(":") if not (Path(p) / "uv").exists()
    )  # the venv path, not uv's
    env = {
        **os.environ,
        "PATH": path,
        "BYOG_VENV": str(tmp_path / "venv"),
        "PYTHON": str(python or shutil.which("python3")),
    }
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "install.sh"), *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_a_python_without_ensurepip_gets_one_sentence_and_no_venv(tmp_path: Path) -> None:
    python = tmp_path / "python3"
    python.write_text(NO_ENSUREPIP)
    python.chmod(0o755)
    result = _install(tmp_path, python=python)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("install.sh: ") and "apt-get install python3.11-venv" in last, result.stderr
    assert not (tmp_path / "venv").exists()  # the half-made venv is removed


def test_an_unknown_argument_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    result = _install(tmp_path, "--tests")
    assert (
        result.returncode == 1
        and result.stderr.strip() == "install.sh: unknown argument --tests: the only option is --test."
    )
    assert not (tmp_path / "venv").exists()
