"""Tiers: one profile, three sizes. ``apply_tier(plan, tier)`` cuts any plan down by fixed rules.

A profile is written at its full size (the published matrix, evals at the task registry's
recommended K and n); the smaller tiers are derived from it, so the three can never drift apart
and a user's own plan file gets the same tiers for free:

- ``full``: the plan as written.
- ``standard``: every server, pair and bench point (the whole published matrix), with at most
  1 warm-up + 3 measured waves per point, launches as written (the plan's and each workload's);
  each eval cut only as far as the accuracy gate stays sound: to the registry's standard design
  (``TaskSpec.standard_items`` x ``standard_passes``: the cheapest with a predicted false-fail rate
  <= 1%, docs/statistics.md) when the eval is at least that large, at the task's default margin or a wider one and with
  the task's own decoding; any other eval runs as written.
- ``smoke`` (minutes): the first candidate/baseline pair only, one launch each (no A/A pair);
  per workload the smallest ISL, OSL capped at 256, the smallest and largest load (B, C or
  rate), 1 + 2 waves; a rate search at most 3 probes; agentic: the smallest and largest
  concurrency with 2 sessions (1 warm-up), a trace's first 32 requests at its largest speedup;
  every eval on 10 items x 1 pass, on that pair. It shows the pipeline works on the hardware,
  not that a claim holds: its verdicts are "screening".

A tiered plan is recorded in the run directory as its own YAML (``tiered_plan_yaml``): verify
re-derives points from ``plan.yaml``, so it must be the plan that ran, not the profile.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

import yaml

from byog.core.errors import UsageError
from byog.plans.tasks import TASKS
from byog.schemas.plan import (
    AgenticWorkload,
    BatchWorkload,
    ComparisonPair,
    ConcurrencyWorkload,
    EvalSpec,
    Plan,
    RateWorkload,
    SyntheticSessions,
)

Tier = Literal["smoke", "standard", "full"]
TIERS: tuple[str, ...] = get_args(Tier)

STANDARD_MAX_WAVES = 3
STANDARD_MAX_WARMUP_WAVES = 1

SMOKE_MAX_OSL = 256
SMOKE_MAX_WAVES = 2
SMOKE_MAX_WARMUP_WAVES = 1
SMOKE_MAX_EVAL_ITEMS = 10
SMOKE_MAX_PROMPTS_PER_SLOT = 1  # concurrency: one prompt per slot of the largest C (enough to reach it)
SMOKE_MAX_RATE_PROMPTS = 32
SMOKE_MAX_SESSIONS = 2  # agentic: measured sessions per point
SMOKE_MAX_TRACE_REQUESTS = 32  # a replayed trace: its first requests
SMOKE_MAX_PROBES = 3  # a rate search

# A value a profile leaves for the user to set: `<SET-ME: what>` (see docs/profiles.md).
PLACEHOLDER = re.compile(r"<SET-ME:[^>]*>")


def _check_tier(tier: str) -> Tier:
    if tier not in TIERS:
        raise UsageError(f"unknown tier '{tier}'; tiers are {', '.join(TIERS)}")
    return tier  # type: ignore[return-value]


def _ends(values: list[Any]) -> list[Any]:
    """The smallest and the largest, in that order (one value if they are equal)."""
    return list(dict.fromkeys([min(values), max(values)]))


def _cap(limit: int | None, cap: int) -> int:
    return cap if limit is None else min(limit, cap)


def _kept_servers(item_servers: list[str] | None, kept: list[str]) -> list[str]:
    return [s for s in (item_servers or kept) if s in kept]


def _standard(plan: Plan) -> Plan:
    workloads = []
    for w in plan.workloads:
        if isinstance(w, BatchWorkload):
            w = w.model_copy(
                update={
                    "warmup_waves": min(w.warmup_waves, STANDARD_MAX_WARMUP_WAVES),
                    "waves": min(w.waves, STANDARD_MAX_WAVES),
                }
            )
        workloads.append(w)
    return plan.model_copy(update={"workloads": workloads, "evals": [_standard_eval(e) for e in plan.evals]})


def _standard_eval(spec: EvalSpec) -> EvalSpec:
    """The registry's standard design for this task, when the spec is at least that large, at
    the default margin or wider, with the task's own decoding; otherwise the spec as written."""
    task = TASKS.get(spec.task)
    if task is None or task.sampled_with(spec.gen_kwargs) != task.sampled:
        return spec
    if spec.margin is not None and spec.margin < task.default_margin:
        return spec
    items = task.standard_items or task.recommended_items
    passes = task.standard_passes or task.recommended_passes
    if eval_items(spec) < items or spec.passes < passes:
        return spec
    limit = items if items < eval_items(spec) else spec.limit
    return spec.model_copy(update={"limit": limit, "passes": passes})


def _smoke_workload(w: Any, servers: list[str]) -> Any:
    if isinstance(w, AgenticWorkload):
        if isinstance(w.source, SyntheticSessions):
            return w.model_copy(
                update={
                    "servers": servers,
                    "concurrencies": _ends(w.concurrencies),
                    "sessions": min(w.sessions, SMOKE_MAX_SESSIONS),
                    "warmup_sessions": min(w.warmup_sessions, 1),
                }
            )
        source = w.source.model_copy(
            update={
                "speedups": [max(w.source.speedups)],
                "max_requests": _cap(w.source.max_requests, SMOKE_MAX_TRACE_REQUESTS),
            }
        )
        return w.model_copy(update={"servers": servers, "source": source})
    common = {"servers": servers, "isl": [min(w.isl)], "osl": [min(min(w.osl), SMOKE_MAX_OSL)]}
    if isinstance(w, BatchWorkload):
        return w.model_copy(
            update={
                **common,
                "batch_sizes": _ends(w.batch_sizes),
                "warmup_waves": min(w.warmup_waves, SMOKE_MAX_WARMUP_WAVES),
                "waves": min(w.waves, SMOKE_MAX_WAVES),
            }
        )
    if isinstance(w, ConcurrencyWorkload):
        loads = _ends(w.concurrencies)
        prompts = min(w.num_prompts, SMOKE_MAX_PROMPTS_PER_SLOT * max(loads))
        return w.model_copy(
            update={
                **common,
                "concurrencies": loads,
                "num_prompts": prompts,
                "warmup_prompts": min(w.warmup_prompts, max(loads)),
            }
        )
    assert isinstance(w, RateWorkload)
    if w.search is not None:
        search = w.search.model_copy(update={"max_probes": min(w.search.max_probes, SMOKE_MAX_PROBES)})
        return w.model_copy(
            update={**common, "search": search, "num_prompts": min(w.num_prompts, SMOKE_MAX_RATE_PROMPTS)}
        )
    return w.model_copy(
        update={**common, "rates": _ends(w.rates), "num_prompts": min(w.num_prompts, SMOKE_MAX_RATE_PROMPTS)}
    )


def _smoke(plan: Plan) -> Plan:
    candidate, baseline = plan.comparisons[0] if plan.comparisons else (plan.baseline, plan.baseline)
    kept = list(dict.fromkeys([candidate, baseline]))
    workloads = []
    for w in plan.workloads:
        servers = _kept_servers(w.servers, kept)
        if servers:  # one launch per server: a workload's own launch count has nothing to cut
            workloads.append(_smoke_workload(w, servers).model_copy(update={"launches": None}))
    # Every eval runs in smoke, on the kept pair when its own servers are gone: smoke shows each
    # task works end to end on the hardware, whichever servers the full plan gives it.
    evals = [
        e.model_copy(
            update={
                "servers": _kept_servers(e.servers, kept) or kept,
                "limit": _cap(e.limit, SMOKE_MAX_EVAL_ITEMS),
                "passes": 1,
            }
        )
        for e in plan.evals
    ]
    pairs = (
        [ComparisonPair(candidate=candidate, baseline=baseline)]
        if plan.pairs is not None and candidate != baseline
        else None
    )
    return plan.model_copy(
        update={
            "servers": {name: plan.servers[name] for name in kept},
            "baseline": baseline,
            "pairs": pairs,
            "workloads": workloads,
            "evals": evals,
            "launches": 1,
            "aa_pair": False,
        }
    )


def apply_tier(plan: Plan, tier: str) -> Plan:
    """The plan cut down to ``tier`` (``full`` returns it as written), re-validated as a Plan."""
    tier = _check_tier(tier)
    if tier == "full":
        return plan
    cut = _smoke(plan) if tier == "smoke" else _standard(plan)
    cut = cut.model_copy(update={"description": f"{plan.description} [tier: {tier}]".strip()})
    # model_copy skips validation: round-trip so the cut plan obeys every rule a written one does.
    return Plan.model_validate(cut.model_dump(mode="json"))


def tiered_plan_yaml(plan: Plan) -> str:
    """The plan as YAML, to record in a run directory; ``parse_plan`` of it gives the same plan.

    ``launches`` and ``aa_pair`` are written only when they differ from 1 and false, so a plan
    that does not use them records the same YAML as before they existed.
    """
    exclude = {key for key, default in (("launches", 1), ("aa_pair", False)) if getattr(plan, key) == default}
    return yaml.safe_dump(
        plan.model_dump(mode="json", exclude_none=True, exclude=exclude), sort_keys=False, allow_unicode=True, width=100
    )


def find_placeholders(plan: Plan) -> list[str]:
    """Where the plan still holds a ``<SET-ME: ...>`` value: 'servers.x.image: <SET-ME: ...>' each."""
    found: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, str):
            for match in PLACEHOLDER.findall(value):
                found.append(f"{where}: {match}")
        elif isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{where}.{key}" if where else str(key))
        elif isinstance(value, list):
            for i, inner in enumerate(value):
                walk(inner, f"{where}[{i}]")

    walk(plan.model_dump(mode="json"), "")
    return found


def require_no_placeholders(plan: Plan) -> None:
    """Refuse to launch a plan that still holds placeholders (call before starting any server)."""
    found = find_placeholders(plan)
    if found:
        raise UsageError(
            f"plan '{plan.name}' still has {len(found)} value(s) to set before a run: "
            + "; ".join(found)
            + " (edit a copy of the profile; docs/profiles.md)"
        )


def eval_items(spec: EvalSpec) -> int:
    """Items an eval scores, for the estimate: its limit, at most the registry's recommended n.

    That n is the whole set for gsm8k (1319), aime25 (30) and gpqa_diamond (198), and byog's
    default sample of MRCR (200); an unknown task counts its limit (0 without one).
    """
    task = TASKS.get(spec.task)
    if task is None:
        return spec.limit or 0
    return task.recommended_items if spec.limit is None else min(spec.limit, task.recommended_items)
