"""Tiers: one profile, three sizes. ``apply_tier(plan, tier)`` cuts any plan down by fixed rules.

A profile is written at its full size (the published matrix, evals at the task registry's
recommended K and n); the smaller tiers are derived from it, so the three can never drift apart
and a user's own plan file gets the same tiers for free:

- ``full``: the plan as written.
- ``standard``: every server, pair and bench point (the whole published matrix), with at most
  1 warm-up + 3 measured waves per point, and evals on at most 100 items x 4 passes (the
  verdict's power and minimum detectable effect, reported with it, show what that costs).
- ``smoke`` (minutes): the first candidate/baseline pair only; per workload the smallest ISL,
  OSL capped at 256, the smallest and largest load (B, C or rate), 1 + 2 waves; every eval on
  10 items x 1 pass, on that pair. It shows the pipeline works on the hardware, not that a
  claim holds.

A tiered plan is recorded in the run directory as its own YAML (``tiered_plan_yaml``): verify
re-derives points from ``plan.yaml``, so it must be the plan that ran, not the profile.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

import yaml

from byog.errors import UsageError
from byog.plans.model import (
    AgenticWorkload, BatchWorkload, ComparisonPair, ConcurrencyWorkload, EvalSpec, Plan, RateWorkload,
)

Tier = Literal["smoke", "standard", "full"]
TIERS: tuple[str, ...] = get_args(Tier)

STANDARD_MAX_WAVES = 3
STANDARD_MAX_WARMUP_WAVES = 1
STANDARD_MAX_EVAL_ITEMS = 100
STANDARD_MAX_EVAL_PASSES = 4

SMOKE_MAX_OSL = 256
SMOKE_MAX_WAVES = 2
SMOKE_MAX_WARMUP_WAVES = 1
SMOKE_MAX_EVAL_ITEMS = 10
SMOKE_MAX_PROMPTS_PER_SLOT = 1  # concurrency: one prompt per slot of the largest C (enough to reach it)
SMOKE_MAX_RATE_PROMPTS = 32

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
            w = w.model_copy(update={"warmup_waves": min(w.warmup_waves, STANDARD_MAX_WARMUP_WAVES),
                                     "waves": min(w.waves, STANDARD_MAX_WAVES)})
        workloads.append(w)
    evals = [e.model_copy(update={"limit": _cap(e.limit, STANDARD_MAX_EVAL_ITEMS),
                                  "passes": min(e.passes, STANDARD_MAX_EVAL_PASSES)}) for e in plan.evals]
    return plan.model_copy(update={"workloads": workloads, "evals": evals})


def _smoke_workload(w: Any, servers: list[str]) -> Any:
    if isinstance(w, AgenticWorkload):
        return w.model_copy(update={"servers": servers})  # still named, still not implemented
    common = {"servers": servers, "isl": [min(w.isl)], "osl": [min(min(w.osl), SMOKE_MAX_OSL)]}
    if isinstance(w, BatchWorkload):
        return w.model_copy(update={**common, "batch_sizes": _ends(w.batch_sizes),
                                    "warmup_waves": min(w.warmup_waves, SMOKE_MAX_WARMUP_WAVES),
                                    "waves": min(w.waves, SMOKE_MAX_WAVES)})
    if isinstance(w, ConcurrencyWorkload):
        loads = _ends(w.concurrencies)
        prompts = min(w.num_prompts, SMOKE_MAX_PROMPTS_PER_SLOT * max(loads))
        return w.model_copy(update={**common, "concurrencies": loads, "num_prompts": prompts,
                                    "warmup_prompts": min(w.warmup_prompts, max(loads))})
    assert isinstance(w, RateWorkload)
    return w.model_copy(update={**common, "rates": _ends(w.rates),
                                "num_prompts": min(w.num_prompts, SMOKE_MAX_RATE_PROMPTS)})


def _smoke(plan: Plan) -> Plan:
    candidate, baseline = plan.comparisons[0] if plan.comparisons else (plan.baseline, plan.baseline)
    kept = list(dict.fromkeys([candidate, baseline]))
    workloads = []
    for w in plan.workloads:
        servers = _kept_servers(w.servers, kept)
        if servers:
            workloads.append(_smoke_workload(w, servers))
    # Every eval runs in smoke, on the kept pair when its own servers are gone: smoke shows each
    # task works end to end on the hardware, whichever servers the full plan gives it.
    evals = [e.model_copy(update={"servers": _kept_servers(e.servers, kept) or kept,
                                  "limit": _cap(e.limit, SMOKE_MAX_EVAL_ITEMS), "passes": 1}) for e in plan.evals]
    pairs = [ComparisonPair(candidate=candidate, baseline=baseline)] if plan.pairs is not None and candidate != baseline else None
    return plan.model_copy(update={
        "servers": {name: plan.servers[name] for name in kept},
        "baseline": baseline,
        "pairs": pairs,
        "workloads": workloads,
        "evals": evals,
    })


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
    """The plan as YAML, to record in a run directory; ``parse_plan`` of it gives the same plan."""
    return yaml.safe_dump(plan.model_dump(mode="json", exclude_none=True), sort_keys=False, allow_unicode=True, width=100)


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
        raise UsageError(f"plan '{plan.name}' still has {len(found)} value(s) to set before a run: "
                         + "; ".join(found) + " (edit a copy of the profile; docs/profiles.md)")


def tier_estimates(plan: Plan, from_run: Any = None) -> list[dict[str, Any]]:
    """For each tier: bench points, servers, GPUs, estimated wall time and GPU-hours (bench only)."""
    from byog.bench.estimate import estimate_plan

    rows = []
    for tier in TIERS:
        cut = apply_tier(plan, tier)
        estimate = estimate_plan(cut, from_run)
        rows.append({
            "tier": tier,
            "servers": len(cut.servers),
            "bench_points": len(estimate["points"]),
            "eval_requests": sum(len(cut.servers_for(e)) * eval_items(e) * e.passes for e in cut.evals),
            "max_gpus": max((s["gpus"] for s in estimate["servers"]), default=0),
            "estimate_s": estimate["total_estimate_s"],
            "gpu_hours": estimate["gpu_hours"],
        })
    return rows


def eval_items(spec: EvalSpec) -> int:
    """Items an eval scores, for the estimate: its limit, at most the registry's recommended n.

    That n is the whole set for gsm8k (1319), aime25 (30) and gpqa_diamond (198), and byog's
    default sample of MRCR (200); an unknown task counts its limit (0 without one).
    """
    from byog.evals.tasks import TASKS

    task = TASKS.get(spec.task)
    if task is None:
        return spec.limit or 0
    return task.recommended_items if spec.limit is None else min(spec.limit, task.recommended_items)


def render_tier_estimates(console: Any, rows: list[dict[str, Any]], current: str) -> None:
    from rich.table import Table

    from byog.bench.estimate import STARTUP_GUESS_S, TPOT_GUESS_S

    table = Table(title="tiers: bench wall time and GPU-hours (evals not timed; without --from-run, guesses of "
                        f"{TPOT_GUESS_S * 1e3:.0f} ms TPOT and {STARTUP_GUESS_S:.0f} s start-up per server)")
    for column in ("tier", "servers", "bench points", "max GPUs", "est. wall", "GPU-hours", "eval requests"):
        table.add_column(column)
    for r in rows:
        mark = " <" if r["tier"] == current else ""
        table.add_row(r["tier"] + mark, str(r["servers"]), str(r["bench_points"]), str(r["max_gpus"]),
                      f"{r['estimate_s'] / 3600:.2f} h", f"{r['gpu_hours']:.2f}", str(r["eval_requests"]))
    console.print(table)


DEFAULT_GPUS_PER_NODE = 4  # a GB300 compute tray; the built-in GPU profiles' hardware


def per_node_launches(plan: Plan, gpus_per_node: int) -> dict[str, list[str]]:
    """For each docker server with more GPUs than one node: the per-node Ray launch (byog.images.multinode)."""
    from byog.images.multinode import describe_launch
    from byog.images.runtime import PreparedModel

    model = PreparedModel(path=plan.model.path, served_name=plan.model.served_name or plan.model.path,
                          tokenizer=plan.model.tokenizer or plan.model.path, max_model_len=plan.model.max_model_len)
    out = {}
    for name, config in plan.servers.items():
        if config.runtime == "docker" and config.tensor_parallel_size * config.data_parallel_size > gpus_per_node:
            out[name] = describe_launch(config, model, name=name, gpus_per_node=gpus_per_node)
    return out


def plan_overview(ref: str | None, tier: str, from_run: Any = None,
                  gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> dict[str, Any]:
    """What ``byog plan`` shows: the tier's matrix, launch commands (per node where a server spans
    several) and estimate, every tier's cost, and the placeholders left to set."""
    from byog.bench.estimate import estimate_plan
    from byog.plans.expand import check_plan_fits
    from byog.plans.load import load_plan

    if gpus_per_node < 1:
        raise UsageError("--gpus-per-node must be at least 1")
    plan, _ = load_plan(ref)
    cut = apply_tier(plan, tier)
    check_plan_fits(cut)
    estimate = estimate_plan(cut, from_run)
    return {**estimate, "tier": tier, "tiers": tier_estimates(plan, from_run), "placeholders": find_placeholders(cut),
            "pairs": [list(pair) for pair in cut.comparisons], "gpus_per_node": gpus_per_node,
            "per_node_launch": per_node_launches(cut, gpus_per_node)}


def render_plan_overview(console: Any, overview: dict[str, Any]) -> None:
    from byog.bench.estimate import render_estimate

    render_estimate(console, overview)
    if overview["per_node_launch"]:
        console.print(f"[bold]per-node launch[/] ({overview['gpus_per_node']} GPUs per node; --gpus-per-node to change; "
                      "hosts are placeholders):", highlight=False)
        for lines in overview["per_node_launch"].values():
            for line in lines:
                console.print(line, highlight=False, soft_wrap=True)
    console.print("pairs: " + ", ".join(f"{c} vs {b}" for c, b in overview["pairs"]), highlight=False)
    render_tier_estimates(console, overview["tiers"], overview["tier"])
    places: dict[str, list[str]] = {}
    for item in overview["placeholders"]:
        where, value = item.split(": ", 1)
        places.setdefault(value, []).append(where)
    for value, wheres in places.items():
        console.print(f"[yellow]to set before a run:[/] {value} in {', '.join(wheres)}", highlight=False, soft_wrap=True)
