"""Fixtures the pipeline tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


def _must_not_run(*args: object, **kwargs: object) -> None:
    raise AssertionError("byog reproduce started something")


@pytest.fixture()
def nothing_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine where anything a reproduction starts fails loudly, and anything it writes shows:
    no server, no model, no Docker engine; runs land in (and the test runs from) ``tmp_path``."""
    monkeypatch.setattr("byog.pipeline.reproduce.run_server", _must_not_run)
    monkeypatch.setattr("byog.pipeline.reproduce.prepare_model", _must_not_run)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    monkeypatch.setenv("BYOG_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    return tmp_path
