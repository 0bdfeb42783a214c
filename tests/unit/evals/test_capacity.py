"""Eval concurrency follows what a real vLLM reported it can hold (tests/fixtures/server-info: CPU vLLM 0.32,
2 GiB KV cache = 93,184 tokens, max_num_seqs 128, max_model_len 4096)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from byog.evals.capacity import UNKNOWN_CAPACITY_CONCURRENCY, eval_concurrency, kv_capacity

STOCK = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "server-info" / "stock.json").read_text())


def with_cache(**cache: Any) -> dict[str, Any]:
    info = copy.deepcopy(STOCK)
    info["vllm_config"]["cache_config"].update(cache)
    return info


def test_the_kv_cache_bounds_long_requests_as_vllm_counts_them() -> None:
    assert kv_capacity(STOCK) == (93184, 128)
    # one request of max_model_len tokens: vLLM's own kv_cache_max_concurrency is 22.75 for this server
    assert STOCK["vllm_config"]["cache_config"]["kv_cache_max_concurrency"] == 22.75
    found = eval_concurrency(STOCK, tokens_per_request=4096)
    assert (found.num_concurrent, found.source) == (22, "server capacity")
    assert found.why == "bound: KV cache tokens / (prompt + max tokens)"
    # GSM8K: 1024 prompt tokens reserved + 256 max tokens
    assert eval_concurrency(STOCK, tokens_per_request=1280).num_concurrent == 72


def test_max_num_seqs_bounds_short_requests() -> None:
    found = eval_concurrency(STOCK, tokens_per_request=80)  # 1,164 would fit in the cache
    assert (found.num_concurrent, found.why) == (128, "bound: max_num_seqs")


def test_blocks_times_block_size_when_the_token_count_is_absent() -> None:
    info = with_cache(kv_cache_size_tokens=None)
    assert kv_capacity(info) == (2912 * 32, 128)


@pytest.mark.parametrize(
    "info",
    [
        None,
        {"vllm_config": {}},
        with_cache(kv_cache_size_tokens=None, num_gpu_blocks=None),
        with_cache(kv_cache_size_tokens=True, num_gpu_blocks=None),
    ],
)
def test_a_server_that_says_nothing_runs_at_the_old_constant_and_says_why(info: Any) -> None:
    found = eval_concurrency(info, tokens_per_request=1280)
    assert (found.num_concurrent, found.source) == (UNKNOWN_CAPACITY_CONCURRENCY, "unknown capacity")
    assert "/server_info" in found.why


def test_the_plan_overrides_the_server() -> None:
    found = eval_concurrency(STOCK, tokens_per_request=1280, planned=4)
    assert (found.num_concurrent, found.source) == (4, "plan")
    assert found.record()["num_concurrent"] == 4
