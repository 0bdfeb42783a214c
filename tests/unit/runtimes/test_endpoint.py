"""The `endpoint` runtime: a server byog did not launch, whose limits only the server can say."""

from __future__ import annotations

import json
from pathlib import Path

from byog.runtimes.endpoint import EndpointServer
from byog.schemas.plan import EndpointConfig
from byog.schemas.server import PreparedModel
from tests.support.fake_vllm import FakeVllm

MODEL = PreparedModel(path="/models/m", served_name="fake", tokenizer="/models/m", max_model_len=4096)


def test_its_context_is_what_the_server_says_never_the_plans_statement(tmp_path: Path) -> None:
    """The plan's model.max_model_len says 4096 of a server byog did not start; its /v1/models card says
    nothing. The context stays unknown (so its evals are refused), in the endpoint and in server.json."""
    fake = FakeVllm(max_model_len=None)
    try:
        silent = EndpointServer("ext", EndpointConfig(url=fake.base_url), MODEL, tmp_path / "a")
        fake.max_model_len = 2048
        said = EndpointServer("ext", EndpointConfig(url=fake.base_url), MODEL, tmp_path / "b")
    finally:
        fake.close()
    assert silent.endpoint.max_model_len is None
    assert json.loads((tmp_path / "a" / "server.json").read_text())["max_model_len"] is None
    assert said.endpoint.max_model_len == 2048
