"""What `byog init` reads of a model folder to choose TP: the heads and KV shape from config.json, the
weights' bytes from the files (a sparse file here: its size is what counts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from byog.core.errors import UsageError
from byog.pipeline import init
from byog.pipeline.init import InitRequest, choose_tp, model_facts, parse_switch
from byog.plans.expand import expand_plan
from byog.plans.init_plan import Build, Gpus

GIB = 2**30
LLAMA_70B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 8192,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "num_hidden_layers": 80,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 131072,
}


def _model(tmp_path: Path, weights_gib: int) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_70B))
    with (folder / "model.safetensors").open("wb") as f:
        f.truncate(weights_gib * GIB)
    return folder


def test_tp_is_the_smallest_that_holds_the_weights_with_kv_room(tmp_path: Path) -> None:
    folder = _model(tmp_path, 140)
    facts = model_facts(str(folder))
    assert facts.weights_bytes == 140 * GIB and facts.config is not None
    req = InitRequest(model=str(folder), candidate=Build("installed"))
    tp, why = choose_tp(req, Gpus(8, "NVIDIA H100 80GB HBM3", 80 * GIB), facts, 1001, 64)
    assert tp == 4 and "fitting choices [4, 8]" in why
    assert choose_tp(req, Gpus(0), facts, 1001, 64) == (1, "the CPU build runs one process")
    with pytest.raises(UsageError, match="--tp 2 does not fit"):
        choose_tp(
            InitRequest(model=str(folder), candidate=Build("installed"), tp=2),
            Gpus(8, "H100", 80 * GIB),
            facts,
            1001,
            64,
        )
    with pytest.raises(UsageError, match="no TP size up to 2 fits 140 GiB"):
        choose_tp(req, Gpus(2, "H100", 80 * GIB), facts, 1001, 64)


def test_a_switch_value_is_read_as_json_where_it_is_json() -> None:
    assert parse_switch(("decode_backend=latency_specialized", "n=3", "on=true")) == {
        "decode_backend": "latency_specialized",
        "n": 3,
        "on": True,
    }


def _on_eight_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **asked: Any) -> InitRequest:
    """``byog init``'s request for a 70B-shaped model on a machine of 8 H100s, with reasoning evals."""
    monkeypatch.setattr(init, "gpus_here", lambda: Gpus(8, "NVIDIA H100 80GB HBM3", 80 * GIB))
    return InitRequest(
        model=str(_model(tmp_path, 140)),
        candidate=Build("installed"),
        baseline=Build("installed"),
        reasoning_evals=True,
        **asked,
    )


def test_a_long_context_plan_with_reasoning_evals_holds_their_prompts_and_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--long-context sizes the context for its longest point (32,768 + 1,000); AIME25 needs 1,024 + 32,768.
    The plan init writes must hold both: byog plan and the run refuse an eval that does not fit."""
    req = _on_eight_gpus(tmp_path, monkeypatch, long_context=True)
    plan, _ = init.write_plan(req, tmp_path / "plan.yaml", force=False)
    assert plan.model.max_model_len == 1024 + 32768
    assert {e.task for e in plan.evals} == {"gsm8k", "aime25", "gpqa_diamond"}
    assert max(p.isl for p in expand_plan(plan)) == 32768  # the longest point stays in


def test_init_writes_no_plan_that_does_not_fit_its_own_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    req = _on_eight_gpus(tmp_path, monkeypatch, max_model_len=8192)
    with pytest.raises(UsageError, match="eval 'aime25' reserves 1024 tokens .* raise it to at least 33792"):
        init.write_plan(req, tmp_path / "plan.yaml", force=False)
    assert not (tmp_path / "plan.yaml").exists()
