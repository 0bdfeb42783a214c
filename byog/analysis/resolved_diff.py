"""How two servers of a pair differ as vLLM resolved them: ``/server_info`` in server.json, never re-derived.

A server's resolved facts are flat dotted keys compared as JSON text:
- ``config.SECTION.FIELD...`` every value of ``vllm_config`` (33 sections on vLLM 0.32, derived
  values included); ``config.additional_config.KEY`` one per key of the flag;
- ``env.NAME``: every ``VLLM_*`` setting vLLM resolved (``vllm_env``, defaults included) and every
  variable vLLM reports from the process (``system_env.env_vars``: CUDA, TORCH, OMP, ...);
- ``system.FIELD``: the rest of ``system_env`` (torch, CUDA and driver versions, GPU models, packages);
- ``attention_backend``: the backend vLLM used (its config, else its own log line, else "unknown").

``IGNORED`` (one list, each entry with its reason) names the facts that name an instance, not a
launch; some only where the pair agrees on what they point at (``IgnoreWhen``).

Differences are grouped by cause: a resolved field named like a command-line flag either side gave
(``enforce_eager`` for ``--enforce-eager``), a key of ``--additional-config`` and an ``env.`` setting
are primary, each a fact of its own; every other config difference is derived and counted under the
primaries (``--enforce-eager: enforce_eager false→true, compilation_config.mode 2→0, +9 derived``).
A config difference with no primary to explain it is a fact of its own (``config.PATH``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from byog.schemas.server import ServerRecord


class IgnoreWhen(Enum):
    ALWAYS = "always"
    WEIGHTS_AGREE = "the weights' and tokenizer's digests agree"
    GPUS_AGREE = "the GPUs' NVML facts agree"


@dataclass(frozen=True)
class Ignored:
    key: str  # a fact key, or a prefix of keys at a dot
    reason: str
    when: IgnoreWhen = IgnoreWhen.ALWAYS


IGNORED: tuple[Ignored, ...] = (
    Ignored("config.instance_id", "a random id vLLM draws at every start"),
    Ignored("env.VLLM_OBJECT_STORAGE_SHM_BUFFER_NAME", "a shared-memory name vLLM draws at every start"),
    Ignored("config.model_config.served_model_name", "the name byog serves the model under"),
    Ignored("config.parallel_config.master_addr", "where the ranks meet: the node's address"),
    Ignored("config.parallel_config.master_port", "where the ranks meet: a free port"),
    Ignored("config.parallel_config.data_parallel_master_ip", "where the DP ranks meet: the node's address"),
    Ignored("config.parallel_config.data_parallel_master_port", "where the DP ranks meet: a free port"),
    Ignored("config.parallel_config.data_parallel_rpc_port", "where the DP ranks meet: a free port"),
    Ignored("env.VLLM_HOST_IP", "the node's address (byog's per-node variable)"),
    Ignored("env.VLLM_PORT", "a free port (byog's per-node variable)"),
    Ignored("env.MASTER_ADDR", "the node's address (byog's per-node variable)"),
    Ignored("env.MASTER_PORT", "a free port (byog's per-node variable)"),
    Ignored("env.BYOG_NODE_MARKER", "byog's tag to find a node's processes"),
    Ignored("system.cpu_info", "lscpu's text holds the clock's current scaling; the CPU model is under hardware"),
    Ignored("config.model_config.model", "a path: the weights' digests say what it held", IgnoreWhen.WEIGHTS_AGREE),
    Ignored(
        "config.model_config.tokenizer", "a path: the tokenizer's digest says what it held", IgnoreWhen.WEIGHTS_AGREE
    ),
    Ignored(
        "env.CUDA_VISIBLE_DEVICES", "which cards, by index: their NVML facts are under gpus", IgnoreWhen.GPUS_AGREE
    ),
)
# Command-line flags that name an instance, not a launch (the "asked" side of the same list).
IGNORED_FLAGS: dict[str, str] = {
    "--host": "where byog makes the server listen",
    "--port": "a free port",
    "--served-model-name": "the name byog serves the model under",
    "--nnodes": "byog's multi-node launch (the resolved parallel sizes are compared)",
    "--node-rank": "byog's multi-node launch",
    "--master-addr": "where the ranks meet: the node's address",
    "--master-port": "where the ranks meet: a free port",
    "--headless": "byog's multi-node launch: ranks without an API server",
    "--data-parallel-address": "where the DP ranks meet: the node's address",
    "--data-parallel-rpc-port": "where the DP ranks meet: a free port",
    "--data-parallel-start-rank": "byog's multi-node launch",
    "--data-parallel-rank": "byog's multi-node launch",
}
# Fields a vLLM flag sets directly, not derived from another one: a difference in one is a fact of its
# own under its flag's name even where neither command line (as byog reads it) gave that flag, so a
# policy allowing one flag never allows, as "derived", a parallel size or dtype set some other way.
DIRECT_FIELDS = frozenset(
    {
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "decode_context_parallel_size",
        "prefill_context_parallel_size",
        "enable_expert_parallel",
        "distributed_executor_backend",
        "dtype",
        "quantization",
        "cache_dtype",
        "max_model_len",
        "max_num_seqs",
        "max_num_batched_tokens",
        "block_size",
        "gpu_memory_utilization",
        "enable_prefix_caching",
        "enable_chunked_prefill",
        "enforce_eager",
        "optimization_level",
        "seed",
        "tokenizer_mode",
        "load_format",
        "revision",
        "kv_cache_memory_bytes",
    }
)
# Derived differences named in a group's line before the count (the rest are "+N derived").
HEADLINE_FIELDS = (
    "config.compilation_config.mode",
    "config.compilation_config.cudagraph_mode",
    "config.optimization_level",
    "config.parallel_config.tensor_parallel_size",
    "config.parallel_config.pipeline_parallel_size",
    "config.parallel_config.data_parallel_size",
    "config.cache_config.cache_dtype",
    "config.model_config.dtype",
    "config.model_config.quantization",
)
HEADLINE_SHOWN = 2
VALUE_CHARS = 40


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _flatten(prefix: str, value: Any, into: dict[str, str]) -> None:
    if isinstance(value, dict):  # an empty one holds no fact: {} and a dict of keys differ in the keys
        for key, item in value.items():
            _flatten(f"{prefix}.{key}", item, into)
    else:
        into[prefix] = _text(value)


def env_vars(text: Any) -> dict[str, str]:
    """vLLM's ``system_env.env_vars``: one ``NAME=value`` per line."""
    if not isinstance(text, str):
        return {}
    pairs = (line.partition("=") for line in text.splitlines())
    return {name: value for name, sep, value in pairs if sep and name}


def resolved_facts(record: ServerRecord) -> dict[str, str] | None:
    """Every resolved fact of one server (see the module docstring), or None where vLLM did not say."""
    resolved = record.resolved
    info = resolved.server_info if resolved is not None else None
    if resolved is None or info is None:
        return None
    facts: dict[str, str] = {}
    _flatten("config", info.get("vllm_config"), facts)
    found = info.get("system_env")
    system: dict[str, Any] = found if isinstance(found, dict) else {}
    facts.update({f"env.{k}": v for k, v in env_vars(system.get("env_vars")).items()})
    vllm_env = info.get("vllm_env")
    if isinstance(vllm_env, dict):
        facts.update({f"env.{k}": _text(v) for k, v in vllm_env.items()})
    facts.update({f"system.{k}": _text(v) for k, v in system.items() if k != "env_vars"})
    facts["attention_backend"] = resolved.attention_backend
    return facts


def covered(key: str, names: Iterable[str]) -> bool:
    """Whether a policy or plan name covers a fact: equal, or a prefix of it at a dot."""
    return any(key == name or key.startswith(name + ".") for name in names)


def ignored(key: str, agree: set[IgnoreWhen]) -> Ignored | None:
    return next((i for i in IGNORED if covered(key, [i.key]) and (i.when in agree)), None)


@dataclass(frozen=True)
class Change:
    key: str
    candidate: str | None  # None: the candidate's record lacks it
    baseline: str | None

    def shown(self, name: str | None = None) -> str:
        a, b = (_cut(v) if v is not None else "(none)" for v in (self.baseline, self.candidate))
        return f"{name or self.key} {a}→{b}"


def _cut(value: str) -> str:
    return value if len(value) <= VALUE_CHARS else value[: VALUE_CHARS - 3] + "..."


def changes(candidate: dict[str, str], baseline: dict[str, str], agree: set[IgnoreWhen]) -> list[Change]:
    """Resolved facts that differ, those of ``IGNORED`` aside, in key order."""
    found = []
    for key in sorted(set(candidate) | set(baseline)):
        a, b = candidate.get(key), baseline.get(key)
        if a != b and ignored(key, agree | {IgnoreWhen.ALWAYS}) is None:
            found.append(Change(key, a, b))
    return found


@dataclass(frozen=True)
class Group:
    """One cause and what it changed: a flag's own field(s) and the config it derived."""

    key: str  # what a policy names: "--enforce-eager", "additional_config.beta", "env.VLLM_X", "config.PATH"
    own: list[Change]
    derived: list[Change]
    with_causes: tuple[str, ...] = ()  # other primaries the derived ones may come from

    @property
    def label(self) -> str:
        """'--enforce-eager: enforce_eager false→true, compilation_config.mode 2→0, +9 derived', 'env.X 1→2'."""
        named = [c for c in self.derived if c.key in HEADLINE_FIELDS][:HEADLINE_SHOWN]
        rest = len(self.derived) - len(named)
        more = (
            [f"+{rest} derived" + (f" (with {', '.join(self.with_causes)})" if self.with_causes else "")]
            if rest
            else []
        )
        if not self.key.startswith("--") and len(self.own) == 1 and not named and not more:
            return self.own[0].shown(self.key)
        own = [c.shown(c.key.rsplit(".", 1)[-1] if self.key.startswith("--") else c.key) for c in self.own]
        return f"{self.key}: {', '.join([*own, *(c.shown(c.key.removeprefix('config.')) for c in named), *more])}"


def _cause(key: str, asked: set[str]) -> str | None:
    """The asked fact a resolved config field is: a key of a JSON flag either side gave, the field named
    like a flag either side gave (``enforce_eager``: ``--enforce-eager``), any key of --additional-config."""
    inner = key.removeprefix("config.")
    if inner in asked or inner.startswith("additional_config."):
        return inner
    leaf = key.rsplit(".", 1)[-1]
    flag = "--" + leaf.replace("_", "-")
    return flag if flag in asked or leaf in DIRECT_FIELDS else None


CAUSE_PREFIXES = (
    "--",
    "additional_config.",
    "speculative_config.",
    "compilation_config.",
    "kv_transfer_config.",
    "env.",
)
CAUSE_KINDS = len(CAUSE_PREFIXES)


def _cause_order(key: str) -> int:
    """Flags first, then JSON flags' keys, then env: the derived config goes under the first cause."""
    return next((i for i, prefix in enumerate(CAUSE_PREFIXES) if key.startswith(prefix)), CAUSE_KINDS)


def group(found: list[Change], asked: set[str]) -> list[Group]:
    """Primary differences each under their cause, the derived ones counted under the first primary
    (the others named in ``with_causes``); derived ones with no primary are facts of their own."""
    primaries: dict[str, list[Change]] = {}
    derived: list[Change] = []
    for change in found:
        cause = _cause(change.key, asked) if change.key.startswith("config.") else change.key
        if cause is None:
            derived.append(change)
        else:
            primaries.setdefault(cause, []).append(change)
    groups = [Group(key, own, []) for key, own in sorted(primaries.items(), key=lambda item: _cause_order(item[0]))]
    causes = [g.key for g in groups if _cause_order(g.key) < CAUSE_KINDS]
    if not causes:
        return groups + [Group(c.key, [c], []) for c in derived]
    first = next(i for i, g in enumerate(groups) if g.key in causes)
    groups[first] = Group(groups[first].key, groups[first].own, derived, tuple(causes[1:]))
    return groups
