"""The KV-cache memory a bench point needs, from the model's config.json, and whether it fits.

Why: a long-context point (ISL 100k x B 16) that cannot hold its KV cache does not fail in vLLM,
it queues or preempts: the point then measures a smaller batch than it says. byog computes what
each point needs before any launch and ``byog plan`` refuses a point that cannot fit, naming it.

The formula is vLLM's own page arithmetic (``vllm/v1/kv_cache_interface.py``, ``AttentionSpec``
and ``FullAttentionSpec.max_memory_usage_bytes``; ``ModelConfig.get_num_kv_heads``), per GPU:

    heads_per_gpu   = 1                               (MLA: one latent, replicated over TP)
                    = max(1, kv_heads // TP)          (otherwise: split over TP, replicated when TP > kv_heads)
    bytes_per_slot  = heads_per_gpu x (head_dim_k + head_dim_v) x dtype_bytes
                      (MLA: head_dim_k = kv_lora_rank + qk_rope_head_dim, head_dim_v = 0)
    blocks(tokens)  = ceil(tokens / (block_size x DCP))   (DCP shards token positions)
    bytes_per_seq   = sum over KV layers of blocks(tokens_l) x block_size x bytes_per_slot
                      (tokens_l = ISL + OSL + draft lookahead; min(that, window + block) on a
                      sliding-window layer)
    needed          = B x bytes_per_seq

Caveats, stated in every result that they touch (``KvShape.caveats``): linear-attention / state-
space layers of a hybrid model hold a fixed state per sequence, not per token, and are not
counted; a quantised KV cache (``--kv-cache-dtype fp8``) is counted at its dtype; vLLM may pad
pages of a hybrid model to a common size (not modelled); a speculative drafter's own KV cache
(a draft *model*, not ngram) is not counted. The budget is what the operator states: vLLM's
``--kv-cache-memory-bytes``, the CPU build's ``VLLM_CPU_KVCACHE_SPACE`` (GiB), or a plan value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from byog.core.argv import arg_value
from byog.core.errors import UsageError
from byog.plans.expand import expand_plan
from byog.schemas.plan import Plan, ServerConfig

# The block size vLLM's CUDA attention backends use unless --block-size says otherwise.
DEFAULT_BLOCK_SIZE = 16

_DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_ds_mla": 1,
    "int8": 1,
}
# Layer types of a hybrid model that hold no per-token KV cache.
_STATE_LAYER_TYPES = {"linear_attention", "mamba", "mamba2", "kda", "gated_deltanet", "conv", "short_conv"}
_SLIDING_LAYER_TYPES = {"sliding_attention", "chunked_attention"}


@dataclass(frozen=True)
class KvShape:
    """What the KV cache of one token of one layer is made of, read from config.json."""

    full_layers: int  # layers holding every token's K/V
    sliding_layers: int  # layers holding at most `sliding_window` tokens
    sliding_window: int | None
    kv_heads: int  # total KV heads (1 for MLA)
    head_dim_k: int
    head_dim_v: int
    dtype_bytes: int
    mla: bool
    max_position_embeddings: int | None
    caveats: tuple[str, ...] = ()

    def heads_per_gpu(self, tp: int) -> int:
        """``1`` for MLA (replicated over TP), else ``max(1, kv_heads // TP)`` (vLLM's get_num_kv_heads)."""
        return 1 if self.mla else max(1, self.kv_heads // tp)

    def bytes_per_slot(self, tp: int) -> int:
        """Bytes one token position takes in one layer on one GPU: ``heads x (d_k + d_v) x dtype_bytes``."""
        return self.heads_per_gpu(tp) * (self.head_dim_k + self.head_dim_v) * self.dtype_bytes


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Multimodal configs keep the language model's fields under ``text_config``."""
    inner = config.get("text_config")
    return inner if isinstance(inner, Mapping) and "num_hidden_layers" in inner else config


def dtype_bytes_of(name: str) -> int:
    key = name.lower().replace("torch.", "")
    if key not in _DTYPE_BYTES:
        raise ValueError(f"unknown KV cache dtype '{name}'")
    return _DTYPE_BYTES[key]


def _cache_dtype(cfg: Mapping[str, Any], kv_cache_dtype: str, model_dtype: str, caveats: list[str]) -> str:
    """The dtype the KV cache is stored in (vLLM's choice for "auto"); an assumption made goes to ``caveats``."""
    if kv_cache_dtype != "auto":
        return kv_cache_dtype
    if model_dtype != "auto":
        return model_dtype
    dtype = str(cfg.get("dtype") or cfg.get("torch_dtype") or "bfloat16").replace("torch.", "")
    if "dtype" not in cfg and "torch_dtype" not in cfg:
        caveats.append("config.json names no dtype: bfloat16 assumed")
    if dtype in ("float32", "float"):
        return "bfloat16"  # vLLM's auto dtype downcasts float32 checkpoints
    return dtype


def kv_shape(config: Mapping[str, Any], kv_cache_dtype: str = "auto", model_dtype: str = "auto") -> KvShape:
    """The KV shape of a Hugging Face config.json (a dict).

    ``kv_cache_dtype`` and ``model_dtype`` as vLLM's ``--kv-cache-dtype`` and ``--dtype``. With
    both "auto" the cache has the model's dtype, and vLLM downcasts a float32 checkpoint to its
    platform's 16-bit type (``_resolve_auto_dtype``: bfloat16 on CPU and Hopper), so 2 bytes.
    """
    cfg = _text_config(config)
    layers = int(cfg["num_hidden_layers"])
    caveats: list[str] = []
    dtype = _cache_dtype(cfg, kv_cache_dtype, model_dtype, caveats)
    mla = "kv_lora_rank" in cfg and cfg.get("kv_lora_rank") is not None
    if mla:
        heads, head_k, head_v = 1, int(cfg["kv_lora_rank"]) + int(cfg.get("qk_rope_head_dim") or 0), 0
    else:
        heads = int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
        head_k = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // int(cfg["num_attention_heads"]))
        head_v = int(cfg.get("v_head_dim") or head_k)
    layer_types = cfg.get("layer_types")
    window = cfg.get("sliding_window")
    full, sliding = layers, 0
    if isinstance(layer_types, list) and len(layer_types) == layers:
        state = sum(1 for t in layer_types if t in _STATE_LAYER_TYPES)
        sliding = sum(1 for t in layer_types if t in _SLIDING_LAYER_TYPES)
        full = layers - state - sliding
        if state:
            caveats.append(
                f"{state} of {layers} layers are linear-attention/state layers: their fixed per-sequence "
                "state is not counted"
            )
    elif window and cfg.get("use_sliding_window", True):
        if cfg.get("max_window_layers") is None:
            full, sliding = 0, layers
        else:
            caveats.append(
                "sliding window with max_window_layers is not modelled: every layer counted as full "
                "attention, an upper bound"
            )
    if sliding and not window:
        caveats.append("sliding-window layers without a sliding_window size: counted as full attention")
        full, sliding = full + sliding, 0
    if cfg.get("linear_attn_config") or cfg.get("full_attn_layers"):
        caveats.append(
            "hybrid attention config (linear_attn_config/full_attn_layers) is not modelled: every "
            "layer counted as full attention, an upper bound"
        )
    max_pos = cfg.get("max_position_embeddings")
    return KvShape(
        full_layers=full,
        sliding_layers=sliding,
        sliding_window=int(window) if sliding and window else None,
        kv_heads=heads,
        head_dim_k=head_k,
        head_dim_v=head_v,
        dtype_bytes=dtype_bytes_of(dtype),
        mla=mla,
        max_position_embeddings=int(max_pos) if max_pos else None,
        caveats=tuple(caveats),
    )


def kv_shape_from_dir(model_dir: str | Path, kv_cache_dtype: str = "auto", model_dtype: str = "auto") -> KvShape:
    """``kv_shape`` of ``<model_dir>/config.json``."""
    path = Path(model_dir) / "config.json"
    return kv_shape(json.loads(path.read_text(encoding="utf-8")), kv_cache_dtype, model_dtype)


def blocks_needed(tokens: int, block_size: int = DEFAULT_BLOCK_SIZE, dcp: int = 1) -> int:
    """KV blocks one sequence of ``tokens`` positions takes on one GPU: ``ceil(tokens / (block_size x DCP))``."""
    return math.ceil(tokens / (block_size * dcp)) if tokens > 0 else 0


def kv_bytes_per_sequence(
    shape: KvShape, tokens: int, *, tp: int = 1, dcp: int = 1, block_size: int = DEFAULT_BLOCK_SIZE
) -> int:
    """Bytes one sequence of ``tokens`` positions takes on one GPU (every layer, whole blocks).

    ``sum_l blocks(tokens_l) x block_size x bytes_per_slot``; a sliding-window layer keeps
    ``tokens_l = min(tokens, window + block_size)`` (the window plus the block being filled).
    """
    slot = shape.bytes_per_slot(tp)
    full = shape.full_layers * blocks_needed(tokens, block_size, dcp) * block_size * slot
    sliding = 0
    if shape.sliding_layers and shape.sliding_window:
        kept = min(tokens, shape.sliding_window + block_size)
        sliding = shape.sliding_layers * blocks_needed(kept, block_size, dcp) * block_size * slot
    return full + sliding


@dataclass(frozen=True)
class KvNeed:
    """What one point needs on each GPU of one server, and whether it fits the stated budget."""

    tokens_per_sequence: int  # ISL + OSL + draft lookahead
    batch: int
    bytes_per_sequence: int
    needed_bytes: int
    budget_bytes: int | None  # None: no budget stated, not checked
    budget_source: str | None

    @property
    def fits(self) -> bool | None:
        return None if self.budget_bytes is None else self.needed_bytes <= self.budget_bytes

    @property
    def max_batch(self) -> int | None:
        """The largest B whose KV cache fits the budget at this sequence length."""
        if self.budget_bytes is None or self.bytes_per_sequence == 0:
            return None
        return self.budget_bytes // self.bytes_per_sequence


def kv_need(
    shape: KvShape,
    *,
    isl: int,
    osl: int,
    batch: int,
    tp: int = 1,
    dcp: int = 1,
    block_size: int = DEFAULT_BLOCK_SIZE,
    lookahead: int = 0,
    budget_bytes: int | None = None,
    budget_source: str | None = None,
) -> KvNeed:
    """``needed = B x bytes_per_sequence(ISL + OSL + lookahead)`` per GPU, against a stated budget.

    ``lookahead``: the speculative decoder's draft tokens, for which vLLM reserves slots
    (``num_speculative_tokens``) on top of the sequence.
    """
    tokens = isl + osl + lookahead
    per_seq = kv_bytes_per_sequence(shape, tokens, tp=tp, dcp=dcp, block_size=block_size)
    return KvNeed(tokens, batch, per_seq, batch * per_seq, budget_bytes, budget_source)


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def parse_bytes(value: str) -> int:
    """vLLM's ``human_readable_int``: ``1k`` = 1000, ``1K`` = 1024 (M, G, T alike); plain digits are bytes."""
    value = value.strip()
    match = _HUMAN.fullmatch(value)
    if not match:
        return int(value)
    number, suffix = match.groups()
    if suffix.islower():
        return int(float(number) * 10 ** (3 * "kmgt".index(suffix) + 3))
    if "." in number:
        raise ValueError(f"'{value}': vLLM allows no decimals with a binary suffix")
    return int(number) << (10 * "KMGT".index(suffix) + 10)


def stated_budget(args: list[str], env: Mapping[str, str], cpu_build: bool) -> tuple[int | None, str | None]:
    """(budget bytes per GPU, where it was stated) from a server's vLLM args and env; (None, None) when unstated.

    ``--kv-cache-memory-bytes`` wins (vLLM uses exactly that); on the CPU build
    ``VLLM_CPU_KVCACHE_SPACE`` GiB is the whole KV cache.
    """
    value = arg_value(args, "--kv-cache-memory-bytes")
    if value is not None:
        return parse_bytes(value), f"--kv-cache-memory-bytes {value}"
    if cpu_build and env.get("VLLM_CPU_KVCACHE_SPACE"):
        gib = int(env["VLLM_CPU_KVCACHE_SPACE"])
        return gib * 2**30, f"VLLM_CPU_KVCACHE_SPACE={gib} (GiB)"
    return None, None


def describe(need: KvNeed) -> str:
    """One line for ``byog plan``: needed per GPU against the budget."""
    gib = 2**30
    text = (
        f"{need.batch} x {need.tokens_per_sequence} tokens = {need.needed_bytes / gib:.2f} GiB KV per GPU "
        f"({need.bytes_per_sequence / 2**20:.1f} MiB per sequence)"
    )
    if need.budget_bytes is not None:
        text += f" of {need.budget_bytes / gib:.2f} GiB ({need.budget_source}); at most B = {need.max_batch} fit"
    return text


@dataclass(frozen=True)
class PointKv:
    """The KV need of one (server, point) of a plan."""

    server: str
    point_id: str
    tp: int
    dcp: int
    block_size: int
    need: KvNeed


def server_kv_settings(config: ServerConfig) -> dict[str, Any]:
    """TP, DCP, block size, cache and model dtype and draft lookahead of a server, from its plan entry."""
    spec = config.speculative_config or {}
    block = arg_value(config.args, "--block-size")
    return {
        "tp": config.tensor_parallel_size,
        "dcp": config.decode_context_parallel_size,
        "block_size": int(block) if block and block.isdigit() else DEFAULT_BLOCK_SIZE,
        "kv_cache_dtype": arg_value(config.args, "--kv-cache-dtype") or "auto",
        "model_dtype": arg_value(config.args, "--dtype") or "auto",
        "lookahead": int(spec.get("num_speculative_tokens") or 0),
    }


def plan_kv(
    plan: Plan, config_json: Mapping[str, Any], envs: Mapping[str, Mapping[str, str]], cpu_build: Mapping[str, bool]
) -> list[PointKv]:
    """Every (server, point) of the plan with the KV cache it needs per GPU and the budget its server states.

    ``envs``: each server's effective environment (its plan env over the runtime's defaults);
    ``cpu_build``: whether the server runs vLLM's CPU build (then VLLM_CPU_KVCACHE_SPACE is its budget).
    """
    out = []
    for point in expand_plan(plan):
        for server in point.servers:
            config = plan.servers[server]
            kv = server_kv_settings(config)
            shape = kv_shape(config_json, kv["kv_cache_dtype"], kv["model_dtype"])
            budget, source = stated_budget(config.args, envs.get(server, {}), cpu_build.get(server, False))
            need = kv_need(
                shape,
                isl=point.isl,
                osl=point.osl,
                batch=point.batch_size or point.concurrency or 1,
                tp=kv["tp"],
                dcp=kv["dcp"],
                block_size=kv["block_size"],
                lookahead=kv["lookahead"],
                budget_bytes=budget,
                budget_source=source,
            )
            out.append(PointKv(server, point.point_id, kv["tp"], kv["dcp"], kv["block_size"], need))
    return out


def check_kv_fits(rows: list[PointKv]) -> None:
    """Refuse the first (server, point) whose KV cache cannot fit its server's stated budget, naming it.

    Such a point would not fail in vLLM: requests would wait or be preempted, and the point would
    measure a smaller batch than it says.
    """
    for row in rows:
        need = row.need
        if need.budget_bytes is not None and need.fits is False:
            raise UsageError(
                f"point '{row.point_id}' on server '{row.server}' needs {need.needed_bytes / 2**30:.2f} GiB of KV "
                f"cache per GPU (B = {need.batch} x {need.tokens_per_sequence} tokens at TP {row.tp}, "
                f"DCP {row.dcp}, block {row.block_size}) "
                f"but the server states {need.budget_bytes / 2**30:.2f} GiB ({need.budget_source}); "
                f"at most B = {need.max_batch} fits: lower the batch or ISL, raise TP/DCP or the budget"
            )
