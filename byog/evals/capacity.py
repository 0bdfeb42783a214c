"""Eval concurrency from what the server says it can hold, not a constant.

vLLM resolves its KV cache at start-up and reports it in ``GET /server_info`` (byog keeps the answer
in server.json, ``resolved.server_info``): ``vllm_config.cache_config.kv_cache_size_tokens`` (else
``num_gpu_blocks x block_size``) and ``vllm_config.scheduler_config.max_num_seqs``. An eval request
holds at most its prompt plus its max tokens in the cache, so

    concurrency = min(max_num_seqs, floor(KV tokens / (prompt + max tokens)))    (at least 1)

with prompt + max tokens = the task's prompt reserve + max_gen_toks (within max_model_len: a task
that does not fit is refused, ``byog.plans.tasks.check_eval_fits``; a task whose prompts fill the
context, MRCR, takes max_model_len). Every request then fits at once
and none is preempted. A plan's ``num_concurrent`` overrides it; a server that did not report its
cache (no dev mode, an endpoint, an older vLLM) runs at ``UNKNOWN_CAPACITY_CONCURRENCY`` and the
record says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

UNKNOWN_CAPACITY_CONCURRENCY = 8  # the old constant: what byog runs at when the server reports nothing

Source = Literal["plan", "server capacity", "unknown capacity", "operating points"]


@dataclass(frozen=True)
class Concurrency:
    """The requests in flight an eval ran at, and where that number came from (results.json ``extra``)."""

    num_concurrent: int
    source: Source
    kv_cache_tokens: int | None = None
    max_num_seqs: int | None = None
    tokens_per_request: int | None = None
    why: str = ""

    def record(self) -> dict[str, Any]:
        return asdict(self)


def _int(node: Any, *path: str) -> int | None:
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, int) and not isinstance(node, bool) and node > 0 else None


def kv_capacity(server_info: Mapping[str, Any] | None) -> tuple[int | None, int | None]:
    """(KV cache tokens, max_num_seqs) from a /server_info answer; None where it does not say."""
    config = (server_info or {}).get("vllm_config")
    tokens = _int(config, "cache_config", "kv_cache_size_tokens")
    if tokens is None:
        blocks, block = _int(config, "cache_config", "num_gpu_blocks"), _int(config, "cache_config", "block_size")
        tokens = blocks * block if blocks and block else None
    return tokens, _int(config, "scheduler_config", "max_num_seqs")


def concurrency_for(kv_tokens: int | None, tokens_per_request: int, max_num_seqs: int) -> int:
    """Requests a server holds at once: its KV tokens over one request's, capped by max_num_seqs (the
    module docstring's rule; ``byog plan`` estimates with it too). No KV figure: max_num_seqs alone."""
    if kv_tokens is None:
        return max_num_seqs
    return max(1, min(max_num_seqs, kv_tokens // max(tokens_per_request, 1)))


def eval_concurrency(
    server_info: Mapping[str, Any] | None, tokens_per_request: int, planned: int | None = None
) -> Concurrency:
    """How many eval requests to keep in flight on this server (module docstring)."""
    if planned is not None:
        return Concurrency(planned, "plan", why="the plan's num_concurrent")
    tokens, seqs = kv_capacity(server_info)
    if tokens is None or seqs is None:
        return Concurrency(
            UNKNOWN_CAPACITY_CONCURRENCY,
            "unknown capacity",
            tokens,
            seqs,
            tokens_per_request,
            why="the server did not report its KV cache size and max_num_seqs (/server_info)",
        )
    value = concurrency_for(tokens, tokens_per_request, seqs)
    limit = "max_num_seqs" if value == seqs else "KV cache tokens / (prompt + max tokens)"
    return Concurrency(value, "server capacity", tokens, seqs, tokens_per_request, why=f"bound: {limit}")


def at_operating_points(capacity: Concurrency, points: list[int]) -> Concurrency:
    """The record of an eval whose strata run at the plan's operating points (``byog.analysis.strata``):
    ``num_concurrent`` is the largest point, ``why`` names every point and, beside what the server
    reported, any point above the capacity (its requests queue: the server cannot batch that many)."""
    ordered = sorted(points)
    why = f"each stratum at its operating point ({', '.join(map(str, ordered))} requests in flight)"
    if capacity.source == "server capacity":
        over = [p for p in ordered if p > capacity.num_concurrent]
        why += f"; the server's capacity is {capacity.num_concurrent}" + (
            f", below {', '.join(map(str, over))}: those requests queue" if over else ""
        )
    return replace(capacity, num_concurrent=ordered[-1], source="operating points", why=why)
