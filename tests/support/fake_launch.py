"""Launches that hand out loopback fakes (``FakeVllm``): ``byog run``'s loop or ``byog check`` over
stand-in servers, the model and the machine stand-ins too, no vLLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from byog.pipeline import launch
from byog.runtimes.record import utc_now, write_server_record
from byog.schemas.server import PreparedModel, ServerRecord
from tests.support.fake_vllm import FakeVllm
from tests.support.interleave_run import FakeServer


def launch_fakes(monkeypatch: pytest.MonkeyPatch, made: dict[str, FakeVllm], pipeline: Any) -> list[str]:
    """Every launch (``byog.pipeline.launch.launch_server``) hands out ``made[name]``; the model and the
    machine are stand-ins in ``pipeline`` (the run or check module). The names launched, in order."""
    launched: list[str] = []

    class Runtime:
        def launch(self, name: str, config: Any, model: PreparedModel, server_dir: Path) -> FakeServer:
            launched.append(name)
            write_server_record(server_dir / "server.json", ServerRecord(name=name, starts=[{"started_at": utc_now()}]))
            return FakeServer(name, made[name])

    monkeypatch.setattr(launch, "runtime_for", lambda config: Runtime())
    monkeypatch.setattr(pipeline, "prepare_model", lambda _: PreparedModel(path="m", served_name="fake", tokenizer="m"))
    monkeypatch.setattr(pipeline, "environment_fingerprint", lambda: {"gpu": {"available": False, "reason": "none"}})
    return launched
