"""``byog plan``: the expanded matrix, each server's launch command, a wall-time estimate, and
the planned power of every eval at every tier (``byog.pipeline.eval_power``).

The estimate is deliberately simple: per server and launch, start-up + sum over points of
(requests in sequence) x (TTFT + OSL x TPOT). Guesses are used unless an earlier run directory
is given, in which case its measured start-up time and TPOT/TTFT (per point when the same point
was measured, else the server's median) replace them.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, TypedDict

from byog.analysis import launch_coverage, perf_equivalence
from byog.analysis.bench_summary import summarize_bench
from byog.analysis.gpu_sets import Choice
from byog.analysis.interleave import swaps_in
from byog.bench.agentic import session_shape
from byog.bench.traces import link_sessions, read_trace, selected_lines
from byog.bundles.unpack import Extracted
from byog.core.errors import UsageError
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.images.fingerprint import environment_fingerprint
from byog.pipeline.eval_power import eval_power_rows, eval_prior
from byog.pipeline.evals_at_once import EvalWall, Step, at_once_pairs, eval_wall, with_evals_at_once
from byog.pipeline.interleave import interleaved_rounds
from byog.pipeline.kv_overview import check_plan_kv
from byog.pipeline.plan_rates import (
    SEEDS,
    TPOT_GUESS_S,
    TTFT_GUESS_S,
    EvalEstimate,
    RateLookup,
    batch_of,
    concurrency_said,
    eval_estimates,
    served_capacity,
)
from byog.pipeline.preflight import preflight
from byog.pipeline.run import launch_rounds
from byog.pipeline.runtimes import runtime_for
from byog.pipeline.slurm_submit import SubmitOptions, batch_script, default_run_dir
from byog.pipeline.startup_estimate import (
    MeasuredStart,
    StartupParts,
    measured_relaunches,
    measured_starts,
    startup_parts,
)
from byog.plans.expand import expand_plan, probe_point, search_workloads
from byog.plans.load import load_plan, parse_plan
from byog.plans.numerics_roles import (
    control_choice,
    derived_servers,
    describe_change,
    launch_config,
    resolve_control,
    stock_roles,
)
from byog.plans.tiers import TIERS, apply_tier, eval_items, find_placeholders
from byog.runtimes.cluster import describe_cluster
from byog.schemas.bench import BenchPoint
from byog.schemas.plan import BatchWorkload, Plan, SyntheticSessions, TraceSource
from byog.schemas.server import PreparedModel

__all__ = ["TPOT_GUESS_S", "Estimate", "PlanOverview", "estimate_plan", "plan_overview", "tier_estimates"]


class Measured(TypedDict):
    """What an earlier run measured, for the estimate: start-up seconds, and (TPOT, TTFT) p50 per point."""

    startup: dict[str, float]
    per_point: dict[tuple[str, str], tuple[float, float]]


class PointEstimate(TypedDict):
    server: str
    point_id: str
    kind: str
    load: str
    workload: str
    isl: int
    osl: int
    requests: int
    tpot_s: float
    estimate_s: float
    source: str  # where tpot_s came from: measured, server median, seeds' figure or guess
    why: str  # which figure, in words
    launches: int  # on how many of the server's launches the point runs


class ServerEstimate(TypedDict):
    server: str
    runtime: str
    command: str
    startup_s: float  # the first launch's start-up
    restart_s: float  # each later launch's (``startup_estimate.restart``)
    startup_parts: StartupParts
    points: int
    launches: int
    estimate_s: float
    gpus: int


class Estimate(TypedDict):
    """The bench part of a plan: every point's and server's estimated seconds, and the total."""

    plan: str
    points: list[PointEstimate]
    servers: list[ServerEstimate]
    total_estimate_s: float
    gpu_hours: float
    from_run: str | None
    note: str
    eval_time: list[EvalEstimate]  # per (server, eval): requests, concurrency, expected tokens, seconds
    evals_total_s: float  # every item, in the run's order (two servers at once: the longer of the two)
    evals_order: str | None  # how the evals add up: one server at a time or two at once, and why
    evals_gpu_hours: float
    evals_expected_s: float  # at the expected share of items where looks may stop an eval (identical servers)
    evals_expected_gpu_hours: float
    interleave: list[InterleaveEstimate]  # per interleaved pair: its swaps, and what it saves


class InterleaveEstimate(TypedDict):
    pair: list[str]  # [candidate, baseline]
    swaps: int
    swap_s: float  # one swap (sleep + wake_up)
    swaps_total_s: float
    saves_s: float  # against the sequential drift guard it replaces: a second launch of each server


class TierEstimate(TypedDict):
    tier: str
    servers: int
    bench_points: int
    eval_requests: int
    max_gpus: int
    estimate_s: float  # bench only
    gpu_hours: float  # bench only
    evals_s: float
    evals_expected_s: float
    wall_s: float  # bench + evals
    wall_expected_s: float  # bench + evals at their expected items
    wall_gpu_hours: float  # bench + evals


class Item(TypedDict):
    """One block of the plan's wall time, for the first screen's largest items."""

    what: str
    seconds: float  # at most (every eval item)
    expected_seconds: float  # evals at their expected items (= seconds where nothing stops early)


class PlanOverview(Estimate):
    """What ``byog plan`` shows (``--json`` prints it as it is)."""

    tier: str
    kv_cache: dict[str, Any]  # kv_overview, its rows as plain numbers
    tiers: list[TierEstimate]
    placeholders: list[str]
    pairs: list[list[str]]
    per_node_launch: dict[str, list[str]]
    slurm_batch: str | None  # the batch script `byog slurm submit` would write (plans with slurm servers)
    evals: list[dict[str, Any]]
    eval_prior: str  # which earlier run the eval model comes from, as a sentence
    numerics: list[dict[str, Any]]  # per baseline: the control and envelope variant byog adds, and their cost
    not_checked: list[str]  # what the pre-start checks could not check before launch, each with why
    perf_ci: list[dict[str, Any]]  # per pair: launches, the perf CI they give, its simulated coverage
    wall_s: float  # bench + evals
    wall_gpu_hours: float  # bench + evals
    wall_expected_s: float  # bench + evals at their expected items
    wall_expected_gpu_hours: float
    largest: list[Item]  # the three largest blocks of the wall time
    assumptions: list[str]  # every figure the estimate assumed, each with where it comes from


def launch_command(plan: Plan, server: str) -> str:
    """The command that starts this server (from the runtimes' own argv builder)."""
    config = launch_config(plan, server)
    model = PreparedModel(
        path=plan.model.path,
        served_name=plan.model.served_name or plan.model.path,
        tokenizer=plan.model.tokenizer or plan.model.path,
        max_model_len=plan.model.max_model_len,
    )
    return runtime_for(config).planned(server, config, model, cpu_build=False).command


def _measured(run_dir: Path) -> Measured:
    """Start-up seconds per server and TPOT/TTFT p50 per (server, point) from an earlier run."""
    folder = RunDir(run_dir)
    if not folder.plan_yaml.is_file():
        raise UsageError(f"{run_dir} is not a run directory (no plan.yaml)")
    old_plan = parse_plan(folder.plan_yaml.read_text(encoding="utf-8"), str(folder.plan_yaml))
    startup: dict[str, float] = {}
    for server in old_plan.servers:
        record = folder.server_record(server)
        if record.is_file():
            starts = [s.get("ready_after_s") for s in read_json(record).get("starts") or [] if s.get("ready_after_s")]
            if starts:
                startup[server] = float(max(starts))
    per_point: dict[tuple[str, str], tuple[float, float]] = {}
    for p in summarize_bench(folder, old_plan).points:
        tpot = p.metrics.tpot_s.p50 if p.metrics else None
        ttft = p.metrics.ttft_s.p50 if p.metrics else None
        if tpot:
            per_point[(p.server, p.point_id)] = (tpot, ttft or TTFT_GUESS_S)
    return {"startup": startup, "per_point": per_point}


def point_seconds(point: BenchPoint, tpot_s: float, ttft_s: float) -> float:
    """Requests in sequence x (TTFT + (OSL - 1) x TPOT); agentic: sessions in sequence x the mean session,
    or a trace's schedule / speedup."""
    if isinstance(point.source, SyntheticSessions):
        turns, osl, think = session_shape(point.source)
        session = turns * (ttft_s + max(osl - 1, 0) * tpot_s) + max(turns - 1, 0) * think
        return math.ceil((point.sessions + point.warmup_sessions) / (point.concurrency or 1)) * session
    if isinstance(point.source, TraceSource):
        rows = read_trace(point.source.trace)
        chosen, _ = selected_lines(point.source, rows, link_sessions(rows), point.max_context)
        span_s = (
            (max(rows[i].timestamp for i in chosen) - min(rows[i].timestamp for i in chosen)) / 1000 if chosen else 0.0
        )
        return span_s / (point.speedup or 1.0) + ttft_s + 16 * tpot_s
    one = ttft_s + max(point.osl - 1, 0) * tpot_s
    if point.kind == "batch":
        return (point.warmup_waves + point.waves) * one
    if point.kind == "concurrency":
        return math.ceil(point.total_requests / (point.concurrency or 1)) * one
    assert point.rate is not None
    return point.num_prompts / point.rate + one


def _points_with_probes(plan: Plan) -> list[BenchPoint]:
    """The matrix plus each rate search's probes: its budget, each timed at the first rate."""
    points = expand_plan(plan)
    for workload in search_workloads(plan):
        assert workload.search is not None
        for isl in workload.isl:
            for osl in workload.osl:
                first = probe_point(plan, workload, workload.search.start_rate, isl, osl)
                points += [
                    first.model_copy(update={"point_id": f"{first.point_id.rsplit('-r', 1)[0]}-probe{i + 1}"})
                    for i in range(workload.search.max_probes)
                ]
    return points


def _point_rows(
    plan: Plan, server: str, mine: list[BenchPoint], measured: Measured, rates: RateLookup
) -> list[PointEstimate]:
    """Each point's estimate: its measured TPOT/TTFT, else the server's median, the seeds' figure or a guess."""
    rows: list[PointEstimate] = []
    for p in mine:
        rate = rates(server, p.point_id, batch_of(p))
        ttft = measured["per_point"].get((server, p.point_id), (0.0, TTFT_GUESS_S))[1]
        rows.append(
            {
                "server": server,
                "point_id": p.point_id,
                "kind": p.kind,
                "load": p.load_label,
                "workload": p.workload,
                "isl": p.isl,
                "osl": p.osl,
                "requests": p.total_requests,
                "tpot_s": rate.tpot_s,
                "estimate_s": point_seconds(p, rate.tpot_s, ttft),
                "source": rate.source,
                "why": rate.why,
                "launches": plan.point_launches(p.workload, server),
            }
        )
    return rows


def _server_estimate(
    plan: Plan,
    server: str,
    mine: list[BenchPoint],
    rows: list[PointEstimate],
    starts: tuple[dict[str, MeasuredStart], dict[str, MeasuredStart]],
) -> ServerEstimate:
    """``starts``: an earlier run's first starts and relaunches (``startup_estimate``), or empty."""
    config = plan.servers[server]
    parts = startup_parts(plan, config, server, *starts)
    launches = plan.launches_of(server)
    # every launch starts the server and runs the points it measures again; a relaunch starts at its own figure
    seconds = (
        parts["total_s"] + (launches - 1) * parts["restart_s"] + sum(r["estimate_s"] * r["launches"] for r in rows)
    )
    return {
        "server": server,
        "runtime": config.runtime,
        "command": launch_command(plan, server),
        "startup_s": parts["total_s"],
        "restart_s": parts["restart_s"],
        "startup_parts": parts,
        "points": len(mine),
        "launches": launches,
        "estimate_s": seconds,
        "gpus": _gpus(plan, server),
    }


def estimate_plan(plan: Plan, from_run: Path | None = None) -> Estimate:
    """The matrix, the launch commands and the estimated wall time and GPU-hours of the bench part."""
    measured: Measured = _measured(from_run) if from_run else {"startup": {}, "per_point": {}}
    starts = (measured_starts(from_run), measured_relaunches(from_run)) if from_run else ({}, {})
    points = _points_with_probes(plan)
    rates = RateLookup(plan, measured["per_point"])
    servers: list[ServerEstimate] = []
    rows: list[PointEstimate] = []
    for server in plan.servers:
        mine = [p for p in points if server in p.servers]
        server_rows = _point_rows(plan, server, mine, measured, rates)
        rows += server_rows
        servers.append(_server_estimate(plan, server, mine, server_rows, starts))
    total_s = 0.0
    gpu_h = 0.0
    for est in servers:
        total_s += est["estimate_s"]
        gpu_h += est["estimate_s"] / 3600 * est["gpus"]
    steps, choices = with_evals_at_once(plan, interleaved_rounds(plan, launch_rounds(plan)), None)
    served = served_capacity(from_run) if from_run else None
    evals = eval_estimates(plan, points, rates, served, from_run, at_once_pairs(steps))
    wall = _eval_wall(evals, steps, choices)
    return {
        "plan": plan.name,
        "points": rows,
        "servers": servers,
        "total_estimate_s": total_s,
        "gpu_hours": gpu_h,
        "from_run": str(from_run) if from_run else None,
        "note": "bench: start-ups and points; evals estimated apart",
        "eval_time": evals,
        "evals_total_s": wall.total_s,
        "evals_gpu_hours": sum(e["estimate_s"] / 3600 * _gpus(plan, e["server"]) for e in evals),
        "evals_expected_s": wall.expected_s,
        "evals_order": wall.said,
        "evals_expected_gpu_hours": sum(e["expected_s"] / 3600 * _gpus(plan, e["server"]) for e in evals),
        "interleave": _interleave_estimates(plan, points, servers, from_run),
    }


def _eval_wall(evals: list[EvalEstimate], steps: list[tuple[int, Step]], choices: list[Choice]) -> EvalWall:
    """The evals in the order ``byog run`` takes (``steps``: two servers on GPUs of their own at once, the
    plan's declarations as written, since the plan does not see the host's GPUs)."""
    full: dict[str, float] = {}
    expected: dict[str, float] = {}
    for e in evals:
        full[e["server"]] = full.get(e["server"], 0.0) + e["estimate_s"]
        expected[e["server"]] = expected.get(e["server"], 0.0) + e["expected_s"]
    return eval_wall(steps, choices, full, expected)


def _gpus(plan: Plan, server: str) -> int:
    config = plan.servers[server]
    return config.tensor_parallel_size * config.data_parallel_size


SWAP_GUESS_S = 1.1  # sleep + wake_up of an 8B-class server measured on an H200 (docs/interleave.md)


def _swap_seconds(from_run: Path | None) -> float:
    """The median swap of an earlier run's interleaved servers, else the guess."""
    if from_run is None:
        return SWAP_GUESS_S
    found = []
    for record in sorted((from_run / "servers").glob("*/server.json")):
        sleep = read_json(record).get("sleep_mode") or {}
        found += [float(s["sleep_s"]) + float(s["wake_s"]) for s in sleep.get("swaps") or []]
    return statistics.median(found) if found else SWAP_GUESS_S


def _interleave_estimates(
    plan: Plan, points: list[BenchPoint], servers: list[ServerEstimate], from_run: Path | None
) -> list[InterleaveEstimate]:
    startup = {s["server"]: s["startup_s"] for s in servers}
    swap_s = _swap_seconds(from_run)
    rows: list[InterleaveEstimate] = []
    for candidate, baseline in plan.interleaved_pairs:
        both = [p for p in points if candidate in p.servers and baseline in p.servers]
        swaps = sum(swaps_in(p.waves) if p.kind == "batch" else 1 for p in both) + 1  # + the one before B's evals
        rows.append(
            {
                "pair": [candidate, baseline],
                "swaps": swaps,
                "swap_s": swap_s,
                "swaps_total_s": swaps * swap_s,
                "saves_s": startup.get(candidate, 0.0) + startup.get(baseline, 0.0),
            }
        )
    return rows


def numerics_cost(plan: Plan, from_run: Path | None = None, control_why: str | None = None) -> list[dict[str, Any]]:
    """Per baseline: the control and envelope variant byog adds, and what they cost beyond the plan's servers.

    Each derived server is one start-up plus one ``together`` pass over the baseline's prompts; with
    ``--from-run`` both come from that run (the derivative's own start-up and pass, else the baseline's
    ``together`` pass), else the start-up guess and no pass estimate.
    """
    roles = stock_roles(plan)
    derived = derived_servers(plan)
    folder = RunDir(from_run) if from_run else None
    starts = measured_starts(from_run) if from_run else {}
    rows = []
    for role in roles.values():
        for what, name in (("control", role.control), ("envelope variant", role.variant)):
            if name is None:
                continue
            pass_s = None
            if folder is not None:
                for source in (name, role.baseline):
                    record = folder.numerics_record(source)
                    if record.is_file():
                        passes = read_json(record).get("passes") or []
                        pass_s = next((float(p["wall_s"]) for p in passes if p.get("name") == "together"), None)
                        break
            rows.append(
                {
                    "baseline": role.baseline,
                    "role": what,
                    "server": name,
                    "extra_launch": name in derived,
                    "command": launch_command(plan, name) if name in derived else None,
                    "startup_s": startup_parts(plan, derived[name], name, starts)["total_s"]
                    if name in derived
                    else 0.0,
                    "pass_s": pass_s,
                    "change": describe_change(
                        plan.numerics.control if what == "control" else plan.numerics.envelope_variant
                    )
                    if plan.numerics is not None
                    else None,
                    "why": control_why if what == "control" else None,
                }
            )
    return rows


def tier_estimates(plan: Plan, from_run: Any = None) -> list[TierEstimate]:
    """For each tier: bench points, servers, GPUs, estimated wall time and GPU-hours (bench, evals, both)."""
    rows: list[TierEstimate] = []
    for tier in TIERS:
        cut = apply_tier(plan, tier)
        estimate = estimate_plan(cut, from_run)
        rows.append(
            {
                "tier": tier,
                "servers": len(cut.servers),
                "bench_points": len(estimate["points"]),
                "eval_requests": sum(len(cut.servers_for(e)) * eval_items(e) * e.passes for e in cut.evals),
                "max_gpus": max((s["gpus"] for s in estimate["servers"]), default=0),
                "estimate_s": estimate["total_estimate_s"],
                "gpu_hours": estimate["gpu_hours"],
                "evals_s": estimate["evals_total_s"],
                "evals_expected_s": estimate["evals_expected_s"],
                "wall_s": estimate["total_estimate_s"] + estimate["evals_total_s"],
                "wall_expected_s": estimate["total_estimate_s"] + estimate["evals_expected_s"],
                "wall_gpu_hours": estimate["gpu_hours"] + estimate["evals_gpu_hours"],
            }
        )
    return rows


def per_node_launches(plan: Plan) -> dict[str, list[str]]:
    """Per node, what runs where, for each server with ``nodes > 1`` (both launchers, the plan's first;
    ``runtime: slurm`` adds each step's srun command)."""
    model = PreparedModel(
        path=plan.model.path,
        served_name=plan.model.served_name or plan.model.path,
        tokenizer=plan.model.tokenizer or plan.model.path,
        max_model_len=plan.model.max_model_len,
    )
    return {
        name: describe_cluster(name, launched, model)
        for name, config in plan.servers.items()
        if (launched := config.launched()) is not None and launched.multi_node
    }


def slurm_batch(plan_ref: str | None, plan: Plan, tier: str) -> str | None:
    """The batch script ``byog slurm submit`` would write (default options), for a plan with slurm servers."""
    if not any(c.runs_in_a_slurm_job for c in plan.servers.values()):
        return None
    opts = SubmitOptions(run_dir=default_run_dir().parent / "RUN_ID", tier=tier)
    return batch_script(plan_ref, plan, opts)


SHARES = (0.1, 0.5, 0.9)  # between-launch shares at which `byog plan` shows a CI's coverage


def perf_ci_rows(plan: Plan) -> list[dict[str, Any]]:
    """Per pair with bench points on both sides: its launches, which 95% CI that gives and the coverage it
    buys in the simulation of ``byog.analysis.launch_coverage`` (the plan's waves per point; fixed seeds).
    One row per launch count the pair's workloads run at (``workloads``: theirs, where they differ; None:
    every workload of the pair). A pair that only runs evals has no perf CI."""
    waves = next((w.waves for w in plan.workloads if isinstance(w, BatchWorkload)), 3)
    rows = []
    for candidate, baseline in plan.comparisons:
        counts: dict[tuple[int, int], list[str]] = {}
        for w in plan.workloads:
            if {candidate, baseline} <= set(plan.servers_for(w)):
                key = (plan.workload_launches(w, candidate), plan.workload_launches(w, baseline))
                counts.setdefault(key, []).append(w.name or w.kind)
        for (r_c, r_b), names in counts.items():
            rows.append(_perf_ci_row(candidate, baseline, r_c, r_b, waves, names if len(counts) > 1 else None))
    return rows


def _perf_ci_row(
    candidate: str, baseline: str, r_c: int, r_b: int, waves: int, workloads: list[str] | None
) -> dict[str, Any]:
    one = r_c == 1 and r_b == 1
    method: launch_coverage.Method = "bootstrap" if one else "t"
    trials = 400 if one else 2000
    return {
        "pair": [candidate, baseline],
        "workloads": workloads,
        "launches": [r_c, r_b],
        "waves": waves,
        "ci": perf_equivalence.ONE_LAUNCH_NOTE if one else "launch t interval",
        "df": None if one else r_c + r_b - 2,
        "coverage": {
            str(share): launch_coverage.coverage((r_c, r_b), waves, share, method, trials=trials, resamples=200)
            for share in SHARES
        },
    }


def plan_overview(ref: str | None, tier: str, from_run: Path | None = None) -> PlanOverview:
    """What ``byog plan`` shows: the tier's matrix, launch commands (per node where a server spans
    several) and estimate, every tier's cost, and the placeholders left to set.

    ``from_run`` is a run directory or a bundle; a bundle is extracted (vetted, not verified: its
    figures only feed an estimate) into a private temp dir for the time it is read."""
    if from_run is not None and from_run.is_file():
        with Extracted(from_run) as bundle:
            assert bundle.root is not None
            overview = _plan_overview(ref, tier, bundle.root)
            temp = str(bundle.root)
        said = f"{from_run} (a bundle, not verified: its figures feed this estimate only)"
        return {
            **overview,
            "from_run": said,
            "eval_prior": overview["eval_prior"].replace(temp, str(from_run)),
            "assumptions": [a.replace(temp, str(from_run)) for a in overview["assumptions"]],  # the item model's run
        }
    if from_run is not None and not from_run.is_dir():
        raise UsageError(f"--from-run {from_run}: neither a run directory nor a bundle file")
    return _plan_overview(ref, tier, from_run)


def _plan_overview(ref: str | None, tier: str, from_run: Path | None) -> PlanOverview:
    plan, _ = load_plan(ref)
    tiered, here = apply_tier(plan, tier), environment_fingerprint()
    control = control_choice(tiered, here)  # the plan's own, or the default for where its baselines run
    cut = resolve_control(tiered, here)
    not_checked = preflight(cut, ref or "the smoke profile", for_run=False, env=here)
    kv = check_plan_kv(cut)
    estimate = estimate_plan(cut, from_run)
    kv_rows = [
        {
            "server": r.server,
            "point_id": r.point_id,
            "tp": r.tp,
            "dcp": r.dcp,
            "block_size": r.block_size,
            "tokens": r.need.tokens_per_sequence,
            "batch": r.need.batch,
            "needed_gib": r.need.needed_bytes / 2**30,
            "budget_gib": r.need.budget_bytes / 2**30 if r.need.budget_bytes is not None else None,
            "budget_source": r.need.budget_source,
            "max_batch": r.need.max_batch,
            "fits": r.need.fits,
        }
        for r in kv["rows"]
    ]
    prior_run, prior_text = eval_prior(plan, from_run)
    return {
        **estimate,
        "wall_s": estimate["total_estimate_s"] + estimate["evals_total_s"],
        "wall_gpu_hours": estimate["gpu_hours"] + estimate["evals_gpu_hours"],
        "wall_expected_s": estimate["total_estimate_s"] + estimate["evals_expected_s"],
        "wall_expected_gpu_hours": estimate["gpu_hours"] + estimate["evals_expected_gpu_hours"],
        "largest": largest_items(estimate)[:3],
        "assumptions": assumptions(estimate),
        "tier": tier,
        "kv_cache": {**kv, "rows": kv_rows},
        "tiers": tier_estimates(plan, from_run),
        "placeholders": find_placeholders(cut),
        "pairs": [list(pair) for pair in cut.comparisons],
        "per_node_launch": per_node_launches(cut),
        "slurm_batch": slurm_batch(ref, cut, tier),
        "evals": eval_power_rows(plan, prior_run),
        "eval_prior": prior_text,
        "numerics": numerics_cost(cut, from_run, control.why),
        "not_checked": not_checked,
        "perf_ci": perf_ci_rows(cut),
    }


def largest_items(estimate: Estimate) -> list[Item]:
    """The wall time in blocks a plan can change, largest first: the servers' start-ups, each workload's
    points (every server, every launch), each eval task (every server)."""
    launches = {s["server"]: s["launches"] for s in estimate["servers"]}
    starts = sum(s["startup_s"] + (s["launches"] - 1) * s["restart_s"] for s in estimate["servers"])
    count = sum(launches.values())
    what = f"start-ups ({count} over {len(launches)} servers"
    if count > len(launches):
        what += f": {len(launches)} first, {count - len(launches)} relaunches"
    items: list[Item] = [{"what": what + ")", "seconds": starts, "expected_seconds": starts}]
    workloads: dict[str, list[PointEstimate]] = {}
    for p in estimate["points"]:
        workloads.setdefault(p["workload"], []).append(p)
    for name, rows in workloads.items():
        runs = sum(p["launches"] for p in rows)
        seconds = sum(p["estimate_s"] * p["launches"] for p in rows)
        items.append(
            {
                "what": f"workload '{name}' ({runs} point runs: {len(rows)} points x launches)",
                "seconds": seconds,
                "expected_seconds": seconds,
            }
        )
    tasks: dict[str, list[EvalEstimate]] = {}
    for e in estimate["eval_time"]:
        tasks.setdefault(e["task"], []).append(e)
    # two servers' evals at once take the longer of the two: each task its share of that wall
    summed = sum(e["estimate_s"] for e in estimate["eval_time"])
    at_once = bool(summed) and not math.isclose(estimate["evals_total_s"], summed)
    share = estimate["evals_total_s"] / summed if at_once else 1.0
    summed_expected = sum(e["expected_s"] for e in estimate["eval_time"])
    expected_share = estimate["evals_expected_s"] / summed_expected if at_once else 1.0
    for task, evals in tasks.items():
        at = (
            ", ".join(dict.fromkeys(concurrency_said(e) for e in evals))
            if any(e["operating_points"] for e in evals)
            else "concurrency " + "/".join(str(c) for c in sorted({e["concurrency"] for e in evals}))
        )
        items.append(
            {
                "what": f"eval {task} ({len(evals)} servers x {evals[0]['requests']} requests at {at}"
                f"{', its share of evals at once' if at_once else ''})",
                "seconds": share * sum(e["estimate_s"] for e in evals),
                "expected_seconds": expected_share * sum(e["expected_s"] for e in evals),
            }
        )
    return sorted(items, key=lambda i: -i["expected_seconds"])


def early_stop_assumption(evals: list[EvalEstimate]) -> str | None:
    """The expected-items line: which evals may stop at their looks, the share each is expected to run,
    under which hypothesis, design and discordance (``byog.pipeline.eval_stopping``)."""
    stopping = [e for e in evals if e["early_stop"]]
    if not stopping:
        return None
    tasks: dict[str, tuple[int, dict[str, Any]]] = {}
    for e in stopping:
        count, share = tasks.get(e["task"], (0, e["early_stop"]))
        tasks[e["task"]] = (count + 1, share or {})
    parts = [
        f"{task} {share['identical']:.2f} ({share['at_margin']:.2f}) on {count} server(s), {share['design']}, "
        f"discordance {share['discordance']:.3f}"
        for task, (count, share) in tasks.items()
    ]
    models = ", ".join(
        sorted({"the task registry's prior" if s["model"] == "prior" else str(s["model"]) for _, s in tasks.values()})
    )
    return (
        "evals with looks (group-sequential: the later server of each pair, or both of a pair evaluated at "
        "once or of an interleaved pair in turns, stop where the gate does): expected "
        "share of items if the servers are equivalent (one margin apart), at most all: "
        + "; ".join(parts)
        + f"; item model (discordance = P(d_i != 0)): {models}; normal approximation of the run's boundaries; "
        f"{len(evals) - len(stopping)} other server x task run every item"
    )


def launches_line(estimate: Estimate) -> str | None:
    """Which points run on how many launches (by workload), and which servers start once for evals only;
    None where every point and server has the same count."""
    by_count: dict[int, dict[str, int]] = {}
    for p in estimate["points"]:
        counts = by_count.setdefault(p["launches"], {})
        counts[p["workload"]] = counts.get(p["workload"], 0) + 1
    measured = {p["server"] for p in estimate["points"]}
    eval_only = [s["server"] for s in estimate["servers"] if s["server"] not in measured]
    relaunched = any(count > 1 for count in by_count)
    if len(by_count) < 2 and not (eval_only and relaunched):
        return None
    parts = [
        f"{count} for {sum(workloads.values())} points ({', '.join(workloads)})"
        + ("; perf labels screening (no launch-to-launch variance)" if count == 1 else "")
        for count, workloads in sorted(by_count.items(), reverse=True)
    ]
    if eval_only and relaunched:
        parts.append(f"{', '.join(eval_only)}: evals only, started once (evals run on the first launch)")
    return "launches: " + "; ".join(parts)


def _count_sources(rows: list[tuple[str, str]]) -> str:
    """'seeds' figure for 110 (candidate-tp8 B=1: 193.3 tok/s, ...), guess for 7' from (source, why) rows."""
    by_source: dict[str, list[str]] = {}
    for source, why in rows:
        by_source.setdefault(source, []).append(why)
    parts = []
    for source, whys in by_source.items():
        examples = list(dict.fromkeys(whys))
        shown = "; ".join(examples[:2]) + (f"; {len(examples) - 2} more" if len(examples) > 2 else "")
        parts.append(f"{source} for {len(whys)} ({shown})")
    return ", ".join(parts)


def assumptions(estimate: Estimate) -> list[str]:
    """Every figure the wall time rests on that nothing measured here, each saying where it comes from."""
    points, evals = estimate["points"], estimate["eval_time"]
    out = [f"TPOT of {len(points)} bench points: " + _count_sources([(p["source"], p["why"]) for p in points])]
    if any(p["source"] == SEEDS for p in points) or any(e["tpot_source"] == SEEDS for e in estimate["eval_time"]):
        out.append(
            f"seeds' figures: the published decode tok/s at batch B in claims/{estimate['plan']}.claims.yaml, "
            "TPOT = B / tok/s (no run has measured this plan)"
        )
    if evals:
        out.append(
            f"TPOT of {len(evals)} evals (server x task): "
            + _count_sources([(e["tpot_source"], e["tpot_why"]) for e in evals])
        )
        concurrency = ", ".join(
            dict.fromkeys(
                f"{e['task']} {concurrency_said(e) if e['operating_points'] else e['concurrency']}" for e in evals
            )
        )
        kv = "; ".join(dict.fromkeys(e["kv_why"] for e in evals))
        seqs = "; ".join(dict.fromkeys(e["concurrency_why"].split(", ")[0].removeprefix("min(") for e in evals))
        out.append(
            f"eval concurrency = min(max_num_seqs, KV tokens // (prompt + max tokens)): {concurrency}; {kv}; {seqs} "
            "(1024 on a GPU of 70 GiB or more: the plan does not name the GPU)"
        )
        out.append(
            f"eval output: half of each task's max_gen_toks per answer; TTFT {TTFT_GUESS_S * 1e3:.0f} ms (a guess)"
        )
        stopping = early_stop_assumption(evals)
        if stopping:
            out.append(stopping)
        if estimate["evals_order"]:
            out.append(estimate["evals_order"])
    launch_line = launches_line(estimate)
    if launch_line:
        out.append(launch_line)
    if not estimate["from_run"]:
        out.append("nothing measured: `byog plan --from-run RUN_DIR` takes TPOT, TTFT and start-ups from a run")
    long_isl = [p for p in points if p["isl"] > 1024 and p["source"] != "measured"]
    if long_isl:
        out.append(
            f"{len(long_isl)} points at ISL up to {max(p['isl'] for p in long_isl)}: their decode rate is the figure "
            f"above (not measured at that context) and prefill is a {TTFT_GUESS_S * 1e3:.0f} ms TTFT guess"
        )
    sources = sorted({s["startup_parts"]["source"] for s in estimate["servers"] if s["startup_parts"]["source"]})
    out += [f"start-up: {source}" for source in sources]
    relaunched = [s for s in estimate["servers"] if s["launches"] > 1]
    reasons = sorted({s["startup_parts"]["restart_source"] for s in relaunched})
    out += [
        f"relaunch ({sum(s['launches'] - 1 for s in relaunched if s['startup_parts']['restart_source'] == why)}): {why}"
        for why in reasons
    ]
    return out
