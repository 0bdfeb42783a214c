"""The real byog CLI in a subprocess, as a user's shell starts it: one helper for every test that
needs the installed entry point (`python -m byog`) rather than typer's in-process runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

BYOG = (sys.executable, "-m", "byog")  # the command line: the tests' own interpreter, so the tests' byog


def byog_env(*, unsigned: bool = False, signing_key: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment byog runs in: the tests' own, wide enough that tables are not wrapped.

    ``unsigned`` drops a BYOG_SIGNING_KEY the developer's shell set (a run the test means unsigned
    stays so); ``signing_key`` sets it (after ``unsigned``: the key given wins).
    """
    env = {**os.environ, "COLUMNS": "200", **extra}
    if unsigned:
        env.pop("BYOG_SIGNING_KEY", None)
    if signing_key is not None:
        env["BYOG_SIGNING_KEY"] = str(signing_key)
    return env


def byog(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float = 1800
) -> subprocess.CompletedProcess[str]:
    """``python -m byog ARGS``, its output captured as text; never raises on a non-zero exit (tests
    assert the exit code). ``env`` None: the tests' own environment, unchanged."""
    return subprocess.run(
        [*BYOG, *args],
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def byog_without_terminal(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m byog ARGS`` as a script runs it: stdin is not a terminal (so nothing is asked), the hub offline."""
    return subprocess.run(
        [*BYOG, *args],
        cwd=cwd,
        env=dict(env) if env is not None else byog_env(HF_HUB_OFFLINE="1"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
