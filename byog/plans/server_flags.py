"""Which of a bundle's server settings ``byog reproduce`` may pass to ``vllm serve`` on a maintainer's machine.

A bundle says how its servers were configured, and a reproduction must configure them the same
way; but ``vllm serve`` has flags that run code (``--trust-remote-code``, ``--worker-cls``,
``--logits-processors``, ``--middleware``, plugins), read files (``--chat-template``,
``--tokenizer``, ``--download-dir``, ``--ssl-keyfile``, ``--config``) or reach other hosts
(``--otlp-traces-endpoint``, ``--kv-transfer-config``). So a bundle's flags pass through an
allowlist, taken from vLLM 0.32's ``vllm serve`` parser (``vllm/engine/arg_utils.py``,
``vllm/entrypoints/launchers/cli_args.py``): flags that only change how the engine computes
(sizes, dtypes, backends by name, switches), each value checked to be a number or a name.
Everything else is refused with one sentence naming the flag, unless the maintainer passes it
(``--allow-flag FLAG``; for a key of ``additional_config`` or ``speculative_config``,
``--allow-flag additional_config.KEY``). Flags byog sets itself (host, port, model, served
name) are refused too: a bundle cannot point a server elsewhere. The numerics ``control`` and
``envelope_variant`` changes, appended to a baseline's flags, pass the same list
(``vet_stock_change``), and each environment variable they set needs the maintainer's leave.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from byog.core.errors import UsageError
from byog.core.safe_text import one_line
from byog.schemas.plan import ServerConfig

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")  # a backend, dtype or method name: no path, no spaces


def _int(value: str) -> bool:
    return re.fullmatch(r"-?[0-9]{1,12}", value) is not None


def _size(value: str) -> bool:  # vLLM's human-readable ints: 2048, 2k, 80G, auto
    return re.fullmatch(r"[0-9]{1,15}(\.[0-9]+)?[kKmMgGtT]?|auto|-1", value) is not None


def _float(value: str) -> bool:
    return re.fullmatch(r"-?[0-9]{1,12}(\.[0-9]*)?([eE]-?[0-9]{1,3})?", value) is not None


def _name(value: str) -> bool:
    return _NAME.fullmatch(value) is not None


def _one_of(*choices: str) -> Callable[[str], bool]:
    return lambda value: value in choices


# Switches (vLLM's BooleanOptionalAction: each also has its --no- form) that change only how the
# engine schedules and computes.
_SWITCHES = (
    "--enforce-eager",
    "--enable-prefix-caching",
    "--enable-chunked-prefill",
    "--async-scheduling",
    "--disable-sliding-window",
    "--disable-cascade-attn",
    "--enable-expert-parallel",
    "--enable-eplb",
    "--enable-dbo",
    "--disable-custom-all-reduce",
    "--disable-hybrid-kv-cache-manager",
    "--kv-sharing-fast-prefill",
    "--enable-flashinfer-autotune",
    "--numa-bind",
    "--language-model-only",
    "--skip-mm-profiling",
    "--enable-log-requests",
    "--disable-uvicorn-access-log",
    "--enable-prompt-tokens-details",
    "--enable-force-include-usage",
    "--return-tokens-as-token-ids",
    "--data-parallel-hybrid-lb",
    "--data-parallel-external-lb",
    "--disable-nccl-for-dp-synchronization",
    "--dcp-q-replicate",
    "--scheduler-reserve-full-isl",
    "--long-prefill-token-threshold-adaptive",
    "--use-fp64-gumbel",
)
SWITCHES = frozenset(_SWITCHES) | {"--no-" + s.removeprefix("--") for s in _SWITCHES} | {"--disable-log-stats"}

# Flags with one value, and what that value may be.
VALUES: dict[str, Callable[[str], bool]] = {
    "--dtype": _one_of("auto", "bfloat16", "float", "float16", "float32", "half"),
    "--seed": _int,
    "--max-model-len": _size,
    "--quantization": _name,
    "-q": _name,
    "--max-logprobs": _int,
    "--logprobs-mode": _one_of("processed_logits", "processed_logprobs", "raw_logits", "raw_logprobs"),
    "--load-format": _one_of("auto", "dummy", "safetensors", "pt", "fastsafetensors"),
    "--model-impl": _one_of("auto", "vllm", "transformers"),
    "--tokenizer-mode": _one_of("auto", "slow", "mistral", "hf"),
    "--attention-backend": _name,
    "--mamba-backend": _name,
    "--moe-backend": _name,
    "--linear-backend": _name,
    "--all2all-backend": _name,
    "--sparse-indexer-topk-backend": _name,
    "--kv-cache-dtype": _name,
    "--mamba-cache-dtype": _name,
    "--mamba-ssm-cache-dtype": _name,
    "--mamba-block-size": _int,
    "--mamba-cache-mode": _one_of("align", "none"),
    "--block-size": _int,
    "--gpu-memory-utilization": _float,
    "--kv-cache-memory-bytes": _size,
    "--num-gpu-blocks-override": _int,
    "--prefix-caching-hash-algo": _one_of("sha256", "sha256_cbor", "xxhash", "xxhash_cbor"),
    "--max-num-batched-tokens": _size,
    "--max-num-scheduled-tokens": _size,
    "--max-num-seqs": _int,
    "--max-num-active-seqs": _int,
    "--long-prefill-token-threshold": _int,
    "--scheduling-policy": _one_of("fcfs", "priority"),
    "--stream-interval": _int,
    "--max-cudagraph-capture-size": _int,
    "--optimization-level": _name,
    "--performance-mode": _one_of("balanced", "interactivity", "throughput"),
    "--expert-placement-strategy": _one_of("linear", "round_robin"),
    "--pipeline-parallel-size": _int,
    "-pp": _int,
    "--tensor-parallel-size": _int,
    "-tp": _int,
    "--data-parallel-size": _int,
    "-dp": _int,
    "--decode-context-parallel-size": _int,
    "-dcp": _int,
    "--prefill-context-parallel-size": _int,
    "-pcp": _int,
    "--dcp-comm-backend": _one_of("a2a", "ag_rs"),
    "--dcp-kv-cache-interleave-size": _int,
    "--cp-kv-cache-interleave-size": _int,
    "--ubatch-size": _int,
    "--dbo-decode-token-threshold": _int,
    "--dbo-prefill-token-threshold": _int,
    "--cpu-offload-gb": _float,
    "--max-parallel-loading-workers": _int,
    "--safetensors-load-strategy": _one_of("eager", "lazy", "prefetch"),
    "--uvicorn-log-level": _one_of("critical", "debug", "error", "info", "trace", "warning"),
    "--max-log-len": _int,
    "--spec-method": _name,
    "--spec-tokens": _int,
    "--watermark": _float,
}
# Flags with one or more values (argparse nargs='+').
LISTS: dict[str, Callable[[str], bool]] = {"--cudagraph-capture-sizes": _int}

# Why the flags a maintainer most often meets are refused (any other unlisted flag: "not on the list").
WHY = {
    "--trust-remote-code": "runs Python code from the model's repository",
    "--chat-template": "reads a file",
    "--tokenizer": "reads a tokenizer from a path or the hub instead of the model's",
    "--config": "reads a file of more flags",
    "--worker-cls": "imports a Python class",
    "--worker-extension-cls": "imports a Python class",
    "--scheduler-cls": "imports a Python class",
    "--distributed-executor-backend": "can import a Python class",
    "--logits-processors": "imports Python classes",
    "--middleware": "imports Python code into the API server",
    "--tool-parser-plugin": "imports a Python file",
    "--reasoning-parser-plugin": "imports a Python file",
    "--io-processor-plugin": "imports a plugin",
    "--model-loader-extra-config": "configures the loader with paths and classes",
    "--hf-overrides": "rewrites the model's config",
    "--model-class-overrides": "substitutes model classes",
    "--download-dir": "writes to a path",
    "--allowed-local-media-path": "lets requests read local files",
    "--generation-config": "reads a path",
    "--hf-config-path": "reads a path",
    "--ssl-keyfile": "reads a file",
    "--ssl-certfile": "reads a file",
    "--ssl-ca-certs": "reads a file",
    "--host": "is set by byog",
    "--port": "is set by byog",
    "--uds": "is set by byog",
    "--model": "is the maintainer's (--model-path)",
    "--served-model-name": "is set by byog",
    "--api-key": "is set by byog",
    "--revision": "picks which files of the model to load (the model is the maintainer's)",
    "--code-revision": "picks which remote code to run",
    "--otlp-traces-endpoint": "sends traces to another host",
    "--kv-transfer-config": "connects to other hosts and imports connector classes",
    "--compilation-config": "takes paths and pass classes",
    "-cc": "takes paths and pass classes",
}

# Keys of ``additional_config`` (vLLM --additional-config, read by platform plugins) a bundle may set.
ADDITIONAL_CONFIG_KEYS = frozenset({"decode_backend"})
# Keys of ``speculative_config`` (vLLM SpeculativeConfig) that are numbers, names and switches;
# ``model`` (a drafter path or hub id), ``revision``, ``code_revision`` and ``draft_load_config`` are not.
SPECULATIVE_CONFIG_KEYS = frozenset(
    {
        "method",
        "num_speculative_tokens",
        "num_speculative_tokens_per_batch_size",
        "draft_tensor_parallel_size",
        "tensor_parallel_size",
        "quantization",
        "moe_backend",
        "attention_backend",
        "kv_cache_dtype",
        "max_model_len",
        "enforce_eager",
        "prompt_lookup_max",
        "prompt_lookup_min",
        "disable_padded_drafter_batch",
        "disable_eagle_block_drop",
        "use_local_argmax_reduction",
        "use_heterogeneous_vocab",
        "index_share_for_mtp_iteration",
        "parallel_drafting",
        "suffix_decoding_max_tree_depth",
        "suffix_decoding_max_cached_requests",
        "suffix_decoding_max_spec_factor",
        "suffix_decoding_min_token_prob",
        "rejection_sample_method",
        "synthetic_acceptance_rates",
        "synthetic_acceptance_length",
        "enable_adaptive_verification",
        "draft_sample_method",
        "dspark_draft_topk",
    }
)


_UNLISTED = "is not on byog's list of vllm serve flags a bundle may set (byog/plans/server_flags.py)"


def flag_name(token: str) -> str:
    """'--max_num_seqs=8' -> '--max-num-seqs' (vLLM's parser reads '_' as '-' in flag names)."""
    head = token.split("=", 1)[0]
    return head[:2] + head[2:].replace("_", "-") if head.startswith("--") else head


def server_subject(server: str) -> str:
    """How a refusal names one of the bundle's servers."""
    return f"server '{one_line(server)}' of the bundle"


def _refusal(subject: str, flag: str, why: str | None = None) -> UsageError:
    reason = why or WHY.get(flag) or _UNLISTED
    shown = one_line(flag, 80)
    return UsageError(
        f"{subject} passes {shown}, which {reason}; byog reproduce passes it only when you do (--allow-flag {shown})"
    )


def vet_args(server: str, args: list[str], allowed: Collection[str] = (), *, subject: str | None = None) -> None:
    """Raise UsageError naming the first flag in ``args`` a bundle may not pass and the maintainer did not allow.

    ``subject`` names where the flags come from in that sentence (default: the bundle's server ``server``)."""
    subject = subject or server_subject(server)
    i = 0
    while i < len(args):
        token = args[i]
        flag = flag_name(token)
        if not token.startswith("-"):
            raise UsageError(
                f"{subject} passes '{one_line(token, 80)}' to vllm serve where a flag belongs; "
                "byog reproduce passes only flags"
            )
        inline = "=" in token
        value_of = VALUES.get(flag) or LISTS.get(flag)
        if flag in allowed or token in allowed:
            # the maintainer's: skip the values that follow it
            i += 1
            while not inline and i < len(args) and not args[i].startswith("-"):
                i += 1
            continue
        if flag in SWITCHES:
            if inline:
                raise _refusal(subject, flag, "takes no value")
            i += 1
            continue
        if value_of is None:
            raise _refusal(subject, flag)
        values = [token.split("=", 1)[1]] if inline else []
        i += 1
        if not inline:
            while i < len(args) and not args[i].startswith("-") and (not values or flag in LISTS):
                values.append(args[i])
                i += 1
        if not values or not all(value_of(v) for v in values):
            shown = one_line(" ".join(values), 80) or "no value"
            raise _refusal(subject, flag, f"is given '{shown}' (byog takes only a number or a name there)")


def _scalars(value: Any) -> bool:
    if isinstance(value, list):
        return all(_scalars(v) for v in value)
    if isinstance(value, str):
        return _name(value)
    return value is None or isinstance(value, (bool, int, float))


def _vet_config(
    server: str, field: str, config: dict[str, Any] | None, keys: frozenset[str], allowed: Collection[str]
) -> None:
    subject = server_subject(server)
    for key, value in (config or {}).items():
        name = f"{field}.{key}"
        if name in allowed:
            continue
        if key not in keys:
            raise _refusal(subject, name, "is not a key byog lets a bundle set (byog/plans/server_flags.py)")
        if not _scalars(value):
            raise _refusal(subject, name, "is given something other than numbers and names")


def vet_server(server: str, config: ServerConfig, allowed: Collection[str] = ()) -> None:
    """Everything of ``config`` that reaches ``vllm serve`` (args, additional_config, speculative_config) vetted."""
    vet_args(server, list(config.args), allowed)
    _vet_config(server, "additional_config", config.additional_config, ADDITIONAL_CONFIG_KEYS, allowed)
    _vet_config(server, "speculative_config", config.speculative_config, SPECULATIVE_CONFIG_KEYS, allowed)


def vet_stock_change(field: str, args: list[str], env: dict[str, str], allowed: Collection[str] = ()) -> None:
    """A numerics stock change (``numerics.control``, ``numerics.envelope_variant``) through the same allowlist.

    Its ``args`` reach ``vllm serve`` as a server's do. Its ``env`` reaches the derived server's
    environment, which a reproduction takes from the maintainer: each variable is refused unless
    the maintainer allows it (``--allow-flag FIELD.env.KEY``)."""
    subject = f"the bundle's {field}"
    vet_args(field, args, allowed, subject=subject)
    for key in env:
        name = f"{field}.env.{key}"
        if name not in allowed:
            raise UsageError(
                f"{subject} sets {one_line(key, 80)} in the environment, which byog reproduce takes only from you; it "
                f"keeps the bundle's value only when you allow it (--allow-flag {one_line(name, 120)})"
            )
