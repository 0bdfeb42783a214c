"""Which fields of a bundle's plan a reproduction copies, and which are the maintainer's.

The one home of that division (``byog reproduce``, docs/reproduce.md). A reproduction's plan is
built from nothing: ``copied`` takes a bundle model's ``COPIED`` fields, recursively, and nothing
else; every field on ``MAINTAINER_OWNED`` comes from the maintainer (command line, config file) or
byog's defaults. A field added to a model later is on neither list, so it is left out of every
reproduction until someone lists it on purpose (``tests/unit/plans/test_copied_fields.py`` walks
the schema and fails until then). A model on ``LEFT_OUT`` is never reproduced at all.

What is copied is measurement: the workloads' points, ISL/OSL, prompts and seeds; eval tasks,
their limits and generation settings; the numerics prompts, contexts and stock changes; each
server's parallel layout and ``vllm serve`` flags. Copied is not trusted: ``byog.plans.subset``
vets the flags (``byog.plans.server_flags``), tasks and generation settings
(``byog.plans.gen_kwargs``) of what it copies.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from byog.schemas.plan import (
    AgenticWorkload,
    BatchWorkload,
    ComparisonPair,
    ConcurrencyWorkload,
    DatasetPrompts,
    DockerConfig,
    EndpointConfig,
    EvalSpec,
    LaunchedConfig,
    LocalConfig,
    ModelSpec,
    NumericsSpec,
    NumericsTolerance,
    Plan,
    RandomPrompts,
    RateSearch,
    RateWorkload,
    SloSpec,
    SlurmConfig,
    SshConfig,
    StockVariant,
)

# Every server's vLLM settings, and a launched server's layout: measurement, copied.
_SERVER = frozenset(
    {
        "args",  # vetted: byog.plans.server_flags
        "additional_config",  # vetted
        "speculative_config",  # vetted
        "tensor_parallel_size",
        "data_parallel_size",
        "decode_context_parallel_size",
    }
)
_LAUNCHED = _SERVER | {"startup_timeout_s", "nodes", "launcher", "gpus_per_node"}
# Where and how a server runs: the maintainer's.
_LAUNCHED_OWNED = frozenset({"runtime", "env", "python", "ray_args"})

_WORKLOAD = (
    "kind",
    "name",
    "servers",
    "launches",
    "isl",
    "osl",
    "prompts",
    "api",
    "reset_prefix_cache",
    "request_body",
    "slo",
)

COPIED: dict[type[BaseModel], frozenset[str]] = {
    Plan: frozenset({"name", "model", "servers", "baseline", "pairs", "workloads", "evals", "seeds"})
    | {"launches", "aa_pair", "numerics", "remeasure"},
    ModelSpec: frozenset({"max_model_len"}),
    EndpointConfig: _SERVER,
    LaunchedConfig: _LAUNCHED,  # a runtime's own fields beyond these are listed under its class
    LocalConfig: _LAUNCHED,
    DockerConfig: _LAUNCHED,
    SshConfig: _LAUNCHED,
    SlurmConfig: _LAUNCHED,
    BatchWorkload: frozenset({*_WORKLOAD, "batch_sizes", "warmup_waves", "waves", "ci_target", "min_waves"}),
    ConcurrencyWorkload: frozenset({*_WORKLOAD, "concurrencies", "num_prompts", "warmup_prompts"}),
    RateWorkload: frozenset({*_WORKLOAD, "rates", "num_prompts", "seed", "search"}),
    RandomPrompts: frozenset({"kind", "send"}),
    DatasetPrompts: frozenset({"kind", "dataset", "repeat"}),
    SloSpec: frozenset({"ttft_s", "tpot_s", "e2e_s", "target_share"}),
    RateSearch: frozenset({"start_rate", "growth", "rel_tol", "max_probes", "min_rate"}),
    # task: vetted against byog's registry; gen_kwargs: vetted (byog.plans.gen_kwargs); limit: capped
    EvalSpec: frozenset(
        {
            "task",
            "limit",
            "margin",
            "servers",
            "gen_kwargs",
            "num_concurrent",
            "min_baseline_score",
            "looks",
            "spending",
            "operating_points",
        }
    ),
    NumericsSpec: frozenset(
        {"random_prompts", "random_isl", "dataset", "dataset_prompts", "dataset_isl", "contexts", "max_tokens"}
        | {"top_k", "seed", "conformance", "tolerance", "control", "envelope_variant"}
    ),
    NumericsTolerance: frozenset(
        {"envelope_factor", "floor_abs_dlogprob", "floor_kl", "diverge_kl", "min_bucket_positions", "flat_head_ratio"}
    ),
    StockVariant: frozenset({"args", "env"}),  # args through the flag allowlist; env only where the maintainer allows
    # what a pair differs in on purpose: the reproduction's pair check reads the same declaration
    ComparisonPair: frozenset({"candidate", "baseline", "differs_in", "baseline_is_stock", "isolation"}),
}

MAINTAINER_OWNED: dict[type[BaseModel], frozenset[str]] = {
    Plan: frozenset({"schema_version", "description"}),  # byog's: the current version, a description it writes
    # --model-path (byog's built-in model by default); weights_gib only sizes byog plan's start-up estimate
    ModelSpec: frozenset({"path", "served_name", "tokenizer", "weights_gib"}),
    EndpointConfig: frozenset({"runtime", "url"}),
    LaunchedConfig: _LAUNCHED_OWNED,
    LocalConfig: _LAUNCHED_OWNED,
    DockerConfig: _LAUNCHED_OWNED | {"image", "platform", "gpus", "hosts"},
    SshConfig: _LAUNCHED_OWNED | {"hosts", "ssh_options"},
    SlurmConfig: _LAUNCHED_OWNED | {"image", "platform", "hosts"},
    EvalSpec: frozenset({"passes"}),  # one greedy pass: byog's
    # sleep mode is the maintainer's platform's: sequential by default, and its warm-up after a wake with it
    ComparisonPair: frozenset({"interleave", "wake_warmup_waves"}),
}

# Models a reproduction never copies, and why.
LEFT_OUT: dict[type[BaseModel], str] = {
    AgenticWorkload: "byog reproduce re-runs points of batch, concurrency and rate workloads, not agentic sessions",
}


def listed(model: type[BaseModel]) -> tuple[frozenset[str], frozenset[str]] | None:
    """(copied, maintainer-owned) fields of ``model``: its own lists, or those of the nearest listed base class."""
    for cls in model.__mro__:
        if cls in COPIED or cls in MAINTAINER_OWNED:
            return COPIED.get(cls, frozenset()), MAINTAINER_OWNED.get(cls, frozenset())
    return None


def copied(model: BaseModel) -> dict[str, Any]:
    """The ``COPIED`` fields of a bundle's ``model`` as plain data, recursively, and nothing else."""
    lists = listed(type(model))
    if lists is None:
        raise TypeError(f"{type(model).__name__} is on neither list of byog.plans.copied_fields")
    return {name: _value(getattr(model, name)) for name in sorted(lists[0])}


def _value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return copied(value)
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value if not isinstance(v, tuple(LEFT_OUT))]
    if isinstance(value, dict):
        return {key: _value(v) for key, v in value.items()}
    return value
