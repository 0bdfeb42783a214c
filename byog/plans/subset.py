"""A plan cut down to some of its points and servers, with a maintainer's overrides: the plan a
reproduction runs (``byog reproduce``), recorded as its plan.yaml so verify re-derives it.

``restrict_plan`` keeps the named servers, each workload only at the coordinates (load, ISL,
OSL) of the chosen points, and each eval on at most ``eval_items`` items in one pass. The point
ids stay those of the original (an id names the workload and its coordinates), so a reproduced
point pairs with the original's. ``apply_overrides`` changes only how a server is started: its
image, its model path, extra ``vllm serve`` arguments, or an already-running endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from byog.core.errors import UsageError
from byog.plans.expand import expand_plan
from byog.schemas.plan import AgenticWorkload, Plan

_LOADS = {"batch": "batch_sizes", "concurrency": "concurrencies", "rate": "rates"}


def restrict_plan(plan: Plan, point_ids: Sequence[str], servers: Sequence[str], eval_items: int) -> Plan:
    """The plan with only ``servers``, the workloads' values of ``point_ids``, and evals of ``eval_items`` items."""
    unknown = sorted(set(servers) - set(plan.servers))
    if unknown:
        raise UsageError(f"no server {', '.join(unknown)} in plan '{plan.name}' (it has {', '.join(plan.servers)})")
    points = {p.point_id: p for p in expand_plan(plan)}
    missing = sorted(set(point_ids) - set(points))
    if missing:
        raise UsageError(f"no point {', '.join(missing)} in plan '{plan.name}' (it has {', '.join(points)})")
    kept = [s for s in plan.servers if s in servers]
    chosen = [points[pid] for pid in point_ids]
    workloads: list[Any] = []
    for w in plan.workloads:
        if isinstance(w, AgenticWorkload):
            continue
        name = w.name or w.kind
        mine = [p for p in chosen if p.workload == name]
        on = [s for s in plan.servers_for(w) if s in kept]
        if not mine or not on:
            continue
        loads_by_kind: dict[str, list[Any]] = {
            "batch": [p.batch_size for p in mine],
            "concurrency": [p.concurrency for p in mine],
            "rate": [p.rate for p in mine],
        }
        loads = loads_by_kind[w.kind]
        update: dict[str, Any] = {
            "name": name,
            "servers": on,
            "isl": sorted({p.isl for p in mine}),
            "osl": sorted({p.osl for p in mine}),
            _LOADS[w.kind]: sorted(set(loads)),
        }
        workloads.append(w.model_copy(update=update))
    evals = []
    if eval_items > 0:
        for spec in plan.evals:
            on = [s for s in plan.servers_for(spec) if s in kept]
            if on:
                limit = eval_items if spec.limit is None else min(spec.limit, eval_items)
                evals.append(spec.model_copy(update={"servers": on, "limit": limit, "passes": 1}))
    baseline = plan.baseline if plan.baseline in kept else kept[0]
    pairs = None
    if plan.pairs is not None or plan.baseline not in kept:
        pairs = [pair for pair in plan.pairs or [] if pair.candidate in kept and pair.baseline in kept]
    cut = plan.model_copy(
        update={
            "description": f"{plan.description} [reproduction: {', '.join(point_ids) or 'evals only'}]".strip(),
            "servers": {s: plan.servers[s] for s in kept},
            "baseline": baseline,
            "pairs": pairs,
            "workloads": workloads,
            "evals": evals,
        }
    )
    return Plan.model_validate(cut.model_dump(mode="json"))  # model_copy skips validation


@dataclass
class Overrides:
    """How the reproducing machine starts servers; each entry as given on the command line."""

    images: list[str] = field(default_factory=list)  # "[SERVER=]IMAGE"
    model_path: str | None = None
    server_args: list[str] = field(default_factory=list)  # "[SERVER=]ARG": an ARG starting with '-' is for every server
    endpoints: list[str] = field(default_factory=list)  # "SERVER=URL"

    def describe(self) -> list[str]:
        out = [f"--image {v}" for v in self.images] + [f"--server-arg {v}" for v in self.server_args]
        out += [f"--endpoint {v}" for v in self.endpoints]
        return out + ([f"--model-path {self.model_path}"] if self.model_path else [])


def _split(value: str, servers: Sequence[str], flag: str, *, required: bool) -> tuple[list[str], str]:
    """'SERVER=VALUE' -> ([SERVER], VALUE); a VALUE with no 'SERVER=' in front (an argument starts
    with '-') is for every server, unless the flag needs a server."""
    head, sep, tail = value.partition("=")
    if sep and not head.startswith("-"):
        if head not in servers:
            raise UsageError(f"{flag} {value}: '{head}' is not a server of the plan ({', '.join(servers)})")
        return [head], tail
    if required:
        raise UsageError(f"{flag} takes SERVER=VALUE, not '{value}'")
    return list(servers), value


def apply_overrides(plan: Plan, overrides: Overrides) -> Plan:
    servers = {name: config.model_dump(mode="json") for name, config in plan.servers.items()}
    names = list(servers)
    for value in overrides.images:
        targets, image = _split(value, names, "--image", required=False)
        for name in targets:
            servers[name]["image"] = image
            if servers[name]["runtime"] == "local":
                servers[name]["runtime"] = "docker"
    for value in overrides.server_args:
        targets, arg = _split(value, names, "--server-arg", required=False)
        for name in targets:
            servers[name]["args"] = [*servers[name]["args"], arg]
    for value in overrides.endpoints:
        targets, url = _split(value, names, "--endpoint", required=True)
        for name in targets:
            servers[name].update({"runtime": "endpoint", "url": url})
    data = plan.model_dump(mode="json")
    data["servers"] = servers
    if overrides.model_path:
        data["model"]["path"] = overrides.model_path
    return Plan.model_validate(data)
