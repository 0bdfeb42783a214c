"""Expand a plan's workload grid into bench points, and refuse, before launch, points a server cannot hold.

A point's id names the workload and its coordinates only (``decode-b4-isl32-osl64``), never the
server, so the same id on every server pairs candidate with baseline.
"""

from __future__ import annotations

from typing import Any

from byog.core.argv import arg_value
from byog.core.errors import UsageError
from byog.core.paths import safe_name
from byog.plans.tasks import TASKS, check_eval_fits
from byog.schemas.bench import BenchPoint
from byog.schemas.plan import (
    AgenticWorkload,
    BatchWorkload,
    ConcurrencyWorkload,
    Plan,
    RandomPrompts,
    RateWorkload,
    SyntheticSessions,
)


def _rate_tag(rate: float) -> str:
    return f"{rate:g}".replace("+", "")


def point_id_for(workload: str, kind: str, load: float, isl: int, osl: int) -> str:
    tag = {"batch": f"b{int(load)}", "concurrency": f"c{int(load)}", "rate": f"r{_rate_tag(load)}"}[kind]
    return safe_name(f"{workload}-{tag}-isl{isl}-osl{osl}", "point id")


def agentic_point_id(workload: str, concurrency: int | None = None, speedup: float | None = None) -> str:
    """``{workload}-c{C}`` (sessions in flight) or ``{workload}-x{speedup}`` (a replayed trace)."""
    tag = f"x{_rate_tag(speedup)}" if speedup is not None else f"c{concurrency}"
    return safe_name(f"{workload}-{tag}", "point id")


def plan_context(plan: Plan, servers: tuple[str, ...]) -> int | None:
    """The smallest context the workload's servers are known to hold (their --max-model-len, else the model's)."""
    limits = [_int(arg_value(plan.servers[s].args, "--max-model-len")) or plan.model.max_model_len for s in servers]
    known = [x for x in limits if x is not None]
    return min(known) if known else None


def _agentic_points(plan: Plan, workload: AgenticWorkload, name: str, servers: tuple[str, ...]) -> list[BenchPoint]:
    common = dict(
        workload=name,
        kind="agentic",
        isl=0,
        osl=0,
        api="completions",
        prompts=RandomPrompts(),
        prompt_seed=plan.seeds[0],
        reset_prefix_cache=workload.reset_prefix_cache,
        servers=servers,
        slo=workload.slo,
        source=workload.source,
        max_context=workload.max_context or plan_context(plan, servers),
    )
    if isinstance(workload.source, SyntheticSessions):
        return [
            BenchPoint(
                point_id=agentic_point_id(name, concurrency=c),
                concurrency=c,
                sessions=workload.sessions,
                warmup_sessions=workload.warmup_sessions,
                **common,
            )
            for c in dict.fromkeys(workload.concurrencies)
        ]
    return [
        BenchPoint(point_id=agentic_point_id(name, speedup=x), speedup=x, **common)
        for x in dict.fromkeys(workload.source.speedups)
    ]


def probe_point(plan: Plan, workload: RateWorkload, rate: float, isl: int, osl: int) -> BenchPoint:
    """The rate point a search measures at ``rate`` (an ordinary rate point, marked as a probe)."""
    name = safe_name(workload.name or workload.kind, "workload name")
    return BenchPoint(
        point_id=point_id_for(name, "rate", rate, isl, osl),
        workload=name,
        kind="rate",
        rate=rate,
        isl=isl,
        osl=osl,
        api=workload.api,
        prompts=workload.prompts,
        prompt_seed=plan.seeds[0],
        reset_prefix_cache=workload.reset_prefix_cache,
        request_body=workload.request_body,
        servers=tuple(plan.servers_for(workload)),
        num_prompts=workload.num_prompts,
        arrival_seed=workload.seed,
        slo=workload.slo,
        search_probe=True,
    )


def search_workloads(plan: Plan) -> list[RateWorkload]:
    """Rate workloads that search for their highest rate inside the SLO (their points are chosen while running)."""
    return [w for w in plan.workloads if isinstance(w, RateWorkload) and w.search is not None]


def expand_plan(plan: Plan) -> list[BenchPoint]:
    """Every bench point of the plan known before running, in run order (workload, ISL, OSL, load).

    A rate search's probes are not here: the sweep picks them from the probes it measured
    (``probe_point``), and the summary finds them in the run directory.
    """
    points: list[BenchPoint] = []
    seen: set[str] = set()
    prompt_seed = plan.seeds[0]
    for workload in plan.workloads:
        name = safe_name(workload.name or workload.kind, "workload name")
        servers = tuple(plan.servers_for(workload))
        if isinstance(workload, AgenticWorkload):
            points += [p for p in _agentic_points(plan, workload, name, servers) if p.point_id not in seen]
            seen.update(p.point_id for p in points)
            continue
        if isinstance(workload, RateWorkload) and workload.search is not None:
            continue
        loads = _loads(workload)
        for isl in workload.isl:
            for osl in workload.osl:
                for load in loads:
                    pid = point_id_for(name, workload.kind, load, isl, osl)
                    if pid in seen:
                        continue  # a list that repeats a value: measure it once
                    seen.add(pid)
                    common = dict(
                        point_id=pid,
                        workload=name,
                        kind=workload.kind,
                        isl=isl,
                        osl=osl,
                        api=workload.api,
                        prompts=workload.prompts,
                        prompt_seed=prompt_seed,
                        reset_prefix_cache=workload.reset_prefix_cache,
                        request_body=workload.request_body,
                        servers=servers,
                        slo=workload.slo,
                    )
                    points.append(_load_point(workload, load, common))
    return points


def _loads(workload: BatchWorkload | ConcurrencyWorkload | RateWorkload) -> list[float]:
    """The workload's load axis: batch sizes, concurrencies or rates."""
    if isinstance(workload, BatchWorkload):
        return list(workload.batch_sizes)
    if isinstance(workload, ConcurrencyWorkload):
        return list(workload.concurrencies)
    return list(workload.rates)


def _load_point(
    workload: BatchWorkload | ConcurrencyWorkload | RateWorkload, load: float, common: dict[str, Any]
) -> BenchPoint:
    """The point at one load of the workload; ``common``: the fields every kind shares."""
    if isinstance(workload, BatchWorkload):
        return BenchPoint(
            **common,
            batch_size=int(load),
            warmup_waves=workload.warmup_waves,
            waves=workload.first_stop,  # the point's minimum; its cap is the plan's waves
            ci_target=workload.ci_target,
            max_waves=workload.waves if workload.ci_target is not None else 0,
        )
    if isinstance(workload, ConcurrencyWorkload):
        return BenchPoint(
            **common,
            concurrency=int(load),
            num_prompts=workload.num_prompts,
            warmup_prompts=workload.warmup_prompts,
        )
    return BenchPoint(**common, rate=float(load), num_prompts=workload.num_prompts, arrival_seed=workload.seed)


def points_for_server(plan: Plan, server: str, launch: int = 1) -> list[BenchPoint]:
    """The server's points that launch ``launch`` of it runs (a workload may run on its first launches only)."""
    return [p for p in expand_plan(plan) if server in p.servers and plan.measured_on(p.workload, server, launch)]


def check_plan_fits(plan: Plan, max_model_len: int | None = None, max_num_seqs: dict[str, int] | None = None) -> None:
    """Refuse, before any launch, a workload a server cannot hold; the message names the workload.

    - ISL + OSL over the context (``max_model_len`` argument, else ``--max-model-len`` in the
      server's args, else the plan's ``model.max_model_len``; unknown = not checked);
    - B (batch) or C (concurrency) over the server's ``--max-num-seqs`` (the requests would
      queue, so the point would measure a smaller batch than it says);
    - an agentic workload's ``max_context`` over the server's context (the run refuses it too, against the
      context the server states, and a point that neither the plan nor the server sizes: ``agentic_context``);
    - an lm-eval task whose prompt reserve + answer length exceed the server's context
      (``byog.plans.tasks.check_eval_fits``; the run refuses it too, once the server says its context, and
      refuses every eval on a server that does not say it).
    """
    _check_evals_fit(plan, max_model_len)
    for point in expand_plan(plan):
        for server in point.servers:
            args = plan.servers[server].args
            limit = _context(plan, server, max_model_len)
            if point.kind == "agentic":
                _check_agentic_fits(point, server, limit)
                continue
            if limit is not None and point.isl + point.osl > limit:
                raise UsageError(
                    f"workload '{point.workload}' asks for ISL {point.isl} + OSL {point.osl} = {point.isl + point.osl} "
                    f"tokens but server '{server}' holds at most max_model_len = {limit}"
                )
            seqs = (max_num_seqs or {}).get(server) or _int(arg_value(args, "--max-num-seqs"))
            load = point.batch_size or point.concurrency
            if seqs is not None and load is not None and load > seqs:
                what = "batch size" if point.kind == "batch" else "concurrency"
                raise UsageError(
                    f"workload '{point.workload}' asks for {what} {load} but server '{server}' runs at most "
                    f"--max-num-seqs {seqs} sequences at once"
                )


class AgenticContextUnknown(UsageError):
    """An agentic point whose context neither the plan nor the server states: byog cannot know where to cut
    its sessions (a guess either sends turns the server rejects or measures another workload). Exit 2."""


def agentic_context(point: BenchPoint, server: str, context: int | None) -> int:
    """The context an agentic point cuts its sessions at on ``server``, whose /v1/models says ``context``
    (None: says none): the point's ``max_context`` (the plan's), refused over a stated context, else the
    server's. Neither stated: refused before any request."""
    if point.max_context is not None:
        _check_agentic_fits(point, server, context)
        return point.max_context
    if context is None:
        raise AgenticContextUnknown(
            f"agentic point '{point.point_id}' has no context to cut its sessions at on server '{server}': "
            f"neither the plan (workload '{point.workload}' has no max_context) nor the server (its /v1/models "
            f"card has no max_model_len) states one; set max_context in workload '{point.workload}' of the plan"
        )
    return context


def _check_agentic_fits(point: BenchPoint, server: str, limit: int | None) -> None:
    """Refuse an agentic point that cuts its sessions beyond the server's context (``limit`` None: unknown)."""
    if limit is not None and point.max_context is not None and point.max_context > limit:
        raise UsageError(
            f"workload '{point.workload}' cuts sessions at max_context {point.max_context} tokens "
            f"but server '{server}' holds at most max_model_len = {limit}"
        )


def _context(plan: Plan, server: str, max_model_len: int | None) -> int | None:
    """The server's context: the known limit passed in, else ``--max-model-len`` in its args, else the
    plan's ``model.max_model_len``; None: unknown (not checked)."""
    return max_model_len or _int(arg_value(plan.servers[server].args, "--max-model-len")) or plan.model.max_model_len


def _check_evals_fit(plan: Plan, max_model_len: int | None) -> None:
    for spec in plan.evals:
        task = TASKS.get(spec.task)  # an unknown task is the task check's problem, said once
        if task is None:
            continue
        for server in plan.servers_for(spec):
            context = _context(plan, server, max_model_len)
            if context is not None:  # unstated in the plan: the run checks it once the server says it
                check_eval_fits(task, server, context, spec.gen_kwargs)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        raise UsageError(f"'{value}' is not a whole number") from None
