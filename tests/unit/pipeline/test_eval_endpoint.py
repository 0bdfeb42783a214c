"""`byog eval --endpoint` against a server whose context it learns only from the server: a task that
cannot fit is refused before any task's request, and a rerun once it fits resumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.pipeline.eval_endpoint import EvalFlags, eval_endpoint
from byog.plans.tasks import EvalContextUnknown, EvalDoesNotFit
from tests.support.fake_vllm import FakeVllm


def test_a_task_the_servers_context_cannot_hold_stops_every_task_before_its_first_request(tmp_path: Path) -> None:
    """The server says max_model_len 100; byog's arithmetic (64 tokens of prompt) asked for 64-token
    answers needs 128. The run would have cut them to 36 tokens."""
    fake = FakeVllm(max_model_len=100)
    flags = EvalFlags(endpoint=fake.base_url, tasks="mrcr_generated,arithmetic_generated", limit=2, max_gen_toks=64)
    try:
        with pytest.raises(EvalDoesNotFit) as caught:
            eval_endpoint(flags, tmp_path, NullReporter())
        assert str(caught.value) == (
            "eval 'arithmetic_generated' reserves 64 tokens for its prompts and answers in up to 64, but server "
            "'endpoint' holds at most max_model_len = 100: raise it to at least 128, or lower its max_gen_toks to 36"
        )
        assert fake.requests == []  # not even MRCR's, listed first
        assert not (tmp_path / "evals").exists()
        fake.max_model_len = 128  # the server restarted with room for the answers
        out = eval_endpoint(EvalFlags(**{**flags.__dict__, "tasks": "arithmetic_generated"}), tmp_path, NullReporter())
    finally:
        fake.close()
    assert out["endpoint"]["max_model_len"] == 128 and out["results"][0]["n_items"] == 2
    assert RunDir(tmp_path).eval_complete("endpoint", "arithmetic_generated")
    assert {r.get("max_tokens") for r in fake.requests} == {64}  # the answers as asked, not cut


def test_a_server_that_does_not_say_its_context_runs_no_task_and_a_rerun_resumes(tmp_path: Path) -> None:
    """Its /v1/models card states no max_model_len: byog does not guess one (it once took 2048), it refuses
    every task before any request; once the server states it, the same run directory runs them."""
    fake = FakeVllm(max_model_len=None)
    flags = EvalFlags(endpoint=fake.base_url, tasks="arithmetic_generated,mrcr_generated", limit=2)
    try:
        with pytest.raises(EvalContextUnknown, match="^eval 'arithmetic_generated' needs 80 tokens of context"):
            eval_endpoint(flags, tmp_path, NullReporter())
        with pytest.raises(EvalContextUnknown, match="^eval 'mrcr_generated' sizes its items to the server's context"):
            eval_endpoint(EvalFlags(**{**flags.__dict__, "tasks": "mrcr_generated"}), tmp_path, NullReporter())
        assert fake.requests == [] and not (tmp_path / "evals").exists()
        fake.max_model_len = 128
        out = eval_endpoint(EvalFlags(**{**flags.__dict__, "tasks": "arithmetic_generated"}), tmp_path, NullReporter())
    finally:
        fake.close()
    assert out["endpoint"]["max_model_len"] == 128 and RunDir(tmp_path).eval_complete(
        "endpoint", "arithmetic_generated"
    )
