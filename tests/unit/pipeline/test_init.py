"""What `byog init` reads of a model folder to choose TP: the heads and KV shape from config.json, the
weights' bytes from the files (a sparse file here: its size is what counts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.core.errors import UsageError
from byog.pipeline.init import InitRequest, choose_tp, model_facts, parse_switch
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
