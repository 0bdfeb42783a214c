"""KV-cache bytes per point from config.json, by hand against vLLM's page arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.cli import app
from byog.core.errors import UsageError
from byog.plans import kv_memory as kv
from byog.plans.load import parse_plan

GIB = 2**30

# The MoE shape the H200 runs (Qwen3-30B-A3B): 48 layers, 4 KV heads of 128, bf16.
QWEN3_MOE = {
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "hidden_size": 2048,
    "dtype": "bfloat16",
    "max_position_embeddings": 40960,
    "sliding_window": None,
    "use_sliding_window": False,
    "max_window_layers": 48,
}
# SmolLM2-135M as byog converts it: 30 layers, 3 KV heads of 64 (9 heads x 64 = 576), float32.
SMOLLM2 = {
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "hidden_size": 576,
    "head_dim": 64,
    "dtype": "float32",
    "max_position_embeddings": 8192,
}
# A DeepSeek-style MLA config: one latent of 512 + 64 per token and layer.
MLA = {
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "hidden_size": 7168,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "torch_dtype": "bfloat16",
}


def test_bytes_per_token_of_the_moe_shape() -> None:
    shape = kv.kv_shape(QWEN3_MOE)
    assert (shape.full_layers, shape.sliding_layers, shape.kv_heads, shape.head_dim_k, shape.dtype_bytes) == (
        48,
        0,
        4,
        128,
        2,
    )
    # 4 heads x (128 + 128) x 2 bytes = 2 KiB per layer; x 48 layers = 96 KiB per token
    assert shape.bytes_per_slot(tp=1) == 2048
    assert kv.kv_bytes_per_sequence(shape, 16) == 48 * 2048 * 16
    # TP2 splits the 4 heads; TP8 replicates: max(1, 4 // 8) = 1 head per GPU
    assert shape.bytes_per_slot(tp=2) == 1024
    assert shape.bytes_per_slot(tp=8) == 512


def test_block_rounding_and_dcp() -> None:
    shape = kv.kv_shape(QWEN3_MOE)
    assert kv.blocks_needed(1, 16) == 1
    assert kv.blocks_needed(16, 16) == 1
    assert kv.blocks_needed(17, 16) == 2
    assert kv.blocks_needed(100, 16, dcp=8) == 1  # ceil(100 / 128)
    assert kv.blocks_needed(0) == 0
    # 17 tokens take two whole blocks
    assert kv.kv_bytes_per_sequence(shape, 17) == 48 * 2 * 16 * 2048
    # DCP8 shards the 100,000 positions: ceil(100000 / 128) = 782 blocks of 16 per GPU
    assert kv.kv_bytes_per_sequence(shape, 100_000, dcp=8) == 48 * 782 * 16 * 2048


def test_long_context_points_against_a_budget() -> None:
    shape = kv.kv_shape(QWEN3_MOE)
    # ISL 100,000 + OSL 256 at B = 16 on one GPU: 16 x 48 x ceil(100256/16)=6266 blocks x 16 x 2048 B
    need = kv.kv_need(shape, isl=100_000, osl=256, batch=16, budget_bytes=60 * GIB, budget_source="test")
    assert need.tokens_per_sequence == 100_256
    assert need.bytes_per_sequence == 48 * 6266 * 16 * 2048
    assert need.needed_bytes == 16 * need.bytes_per_sequence
    assert need.needed_bytes / GIB == pytest.approx(146.86, abs=0.01)
    assert need.fits is False
    assert need.max_batch == 6  # 60 GiB // 9.18 GiB
    assert "at most B = 6 fit" in kv.describe(need)
    # TP2 halves it per GPU: still 73.4 GiB > 60
    assert kv.kv_need(shape, isl=100_000, osl=256, batch=16, tp=2, budget_bytes=60 * GIB).fits is False
    assert kv.kv_need(shape, isl=32_768, osl=256, batch=16, budget_bytes=60 * GIB).fits is True
    assert kv.kv_need(shape, isl=1, osl=1000, batch=64).fits is None  # no budget stated: not checked


def test_speculative_lookahead_adds_slots() -> None:
    shape = kv.kv_shape(QWEN3_MOE)
    plain = kv.kv_need(shape, isl=1, osl=1000, batch=1)
    spec = kv.kv_need(shape, isl=1, osl=1000, batch=1, lookahead=7)
    assert spec.tokens_per_sequence == 1008
    assert plain.bytes_per_sequence == 48 * 63 * 16 * 2048  # ceil(1001 / 16) = 63
    assert spec.bytes_per_sequence == plain.bytes_per_sequence  # 1008 still fits 63 blocks


def test_float32_model_and_fp8_cache_dtype() -> None:
    # vLLM's auto dtype serves a float32 checkpoint in bfloat16 (seen in the CPU server's log: dtype=torch.bfloat16)
    assert kv.kv_shape(SMOLLM2).bytes_per_slot(1) == 3 * 128 * 2
    assert kv.kv_shape(SMOLLM2, model_dtype="float32").bytes_per_slot(1) == 3 * 128 * 4
    assert kv.kv_shape(SMOLLM2, "fp8").bytes_per_slot(1) == 3 * 128
    assert kv.kv_shape(SMOLLM2, "bfloat16").bytes_per_slot(1) == 3 * 128 * 2
    with pytest.raises(ValueError, match="unknown KV cache dtype"):
        kv.kv_shape(SMOLLM2, "fp5")


def test_mla_is_one_latent_replicated_over_tp() -> None:
    shape = kv.kv_shape(MLA)
    assert shape.mla and shape.kv_heads == 1 and (shape.head_dim_k, shape.head_dim_v) == (576, 0)
    assert shape.bytes_per_slot(1) == shape.bytes_per_slot(8) == 576 * 2


def test_hybrid_and_sliding_layers() -> None:
    hybrid = {
        **QWEN3_MOE,
        "num_hidden_layers": 4,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    }
    shape = kv.kv_shape(hybrid)
    assert shape.full_layers == 1 and any("not counted" in c for c in shape.caveats)
    sliding = {
        **QWEN3_MOE,
        "num_hidden_layers": 2,
        "sliding_window": 128,
        "layer_types": ["sliding_attention", "full_attention"],
    }
    shape = kv.kv_shape(sliding)
    assert (shape.full_layers, shape.sliding_layers, shape.sliding_window) == (1, 1, 128)
    # 1000 tokens: the full layer holds 63 blocks, the sliding layer min(1000, 128 + 16) = 144 -> 9 blocks
    assert kv.kv_bytes_per_sequence(shape, 1000) == (63 + 9) * 16 * 2048
    mistral = {
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "hidden_size": 1024,
        "sliding_window": 4096,
        "dtype": "bfloat16",
    }
    assert kv.kv_shape(mistral).sliding_layers == 2


def test_multimodal_text_config_is_used() -> None:
    shape = kv.kv_shape({"architectures": ["X"], "text_config": QWEN3_MOE})
    assert shape.full_layers == 48


def test_stated_budget_sources() -> None:
    assert kv.parse_bytes("1000") == 1000
    assert kv.parse_bytes("1k") == 1000
    assert kv.parse_bytes("64G") == 64 * GIB
    assert kv.parse_bytes("1.5g") == 1_500_000_000
    with pytest.raises(ValueError):
        kv.parse_bytes("1.5G")
    assert kv.stated_budget(["--kv-cache-memory-bytes", "60G"], {}, cpu_build=False) == (
        60 * GIB,
        "--kv-cache-memory-bytes 60G",
    )
    assert (
        kv.stated_budget(["--kv-cache-memory-bytes=1000"], {"VLLM_CPU_KVCACHE_SPACE": "1"}, cpu_build=True)[0] == 1000
    )
    assert kv.stated_budget([], {"VLLM_CPU_KVCACHE_SPACE": "1"}, cpu_build=True) == (
        GIB,
        "VLLM_CPU_KVCACHE_SPACE=1 (GiB)",
    )
    assert kv.stated_budget([], {"VLLM_CPU_KVCACHE_SPACE": "1"}, cpu_build=False) == (None, None)


# --- a plan's points against the stated budget (what `byog plan` and `byog run` refuse) ----------

REPO = Path(__file__).resolve().parents[3]
CONFIG_131K = REPO / "benchmarks" / "gpu" / "models" / "qwen3-moe-30b-a3b-shape-131k"


def longctx_plan(tp: int) -> str:
    text = (REPO / "byog" / "plans" / "profiles" / "h200-longctx.yaml").read_text(encoding="utf-8")
    text = text.replace("/tmp/models/qwen3-moe-30b-a3b-shape-131k", str(CONFIG_131K))
    return text.replace("tensor_parallel_size: 2", f"tensor_parallel_size: {tp}")


def test_the_long_context_profile_fits_two_h200s() -> None:
    plan = parse_plan(longctx_plan(2), "h200-longctx")
    config = json.loads((CONFIG_131K / "config.json").read_text())
    rows = kv.plan_kv(plan, config, {}, {})
    kv.check_kv_fits(rows)  # every point fits 80 GiB per GPU at TP2
    worst = max(rows, key=lambda r: r.need.needed_bytes)
    assert worst.point_id == "longctx-long-b16-isl100000-osl512"
    assert worst.need.needed_bytes / GIB == pytest.approx(73.6, abs=0.1)
    assert worst.need.budget_source == "--kv-cache-memory-bytes 80G"


def test_a_point_that_cannot_fit_is_refused_by_name(tmp_path: Path) -> None:
    plan = parse_plan(longctx_plan(1), "h200-longctx at TP1")
    config = json.loads((CONFIG_131K / "config.json").read_text())
    with pytest.raises(
        UsageError,
        match=r"point 'longctx-long-b16-isl100000-osl512' on server 'stock-tp2' needs 147\.\d\d GiB"
        r".*at most B = 8 fits",
    ):
        kv.check_kv_fits(kv.plan_kv(plan, config, {}, {}))
    # `byog plan` refuses it the same way, before anything is launched
    path = tmp_path / "tp1.yaml"
    path.write_text(longctx_plan(1), encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code != 0
    assert "longctx-long-b16-isl100000-osl512" in result.output and "KV cache" in result.output


def test_cpu_budget_and_speculative_lookahead_from_the_server_entry() -> None:
    plan = parse_plan(
        """
name: t
model: {path: /m}
servers:
  spec:
    runtime: local
    speculative_config: {method: ngram, num_speculative_tokens: 4}
    env: {VLLM_CPU_KVCACHE_SPACE: "1"}
baseline: spec
workloads: [{kind: batch, batch_sizes: [4], isl: [256], osl: [128]}]
""",
        "t",
    )
    rows = kv.plan_kv(plan, SMOLLM2, {"spec": plan.servers["spec"].env}, {"spec": True})
    (row,) = rows
    assert row.need.tokens_per_sequence == 256 + 128 + 4
    assert row.need.bytes_per_sequence == 30 * 25 * 16 * 768  # ceil(388 / 16) = 25 blocks
    assert row.need.budget_bytes == GIB and row.need.fits
