"""`byog run`, `serve`, `derive`, `plan`, `version`: the plan's life cycle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from byog import __version__
from byog.cli.common import (
    DataDirOpt,
    ForOpt,
    JsonOpt,
    PlanArg,
    RunDirOpt,
    TierOpt,
    console,
    print_json,
    reporter,
    run_dir_option,
    server_option,
)
from byog.cli.console_reporter import print_table
from byog.core.errors import UsageError
from byog.core.numbers import decimal, duration
from byog.core.reporter import Table

if TYPE_CHECKING:
    from byog.pipeline.planview import PlanOverview


def version_cmd() -> None:
    """Print byog's version."""
    typer.echo(__version__)


def run_cmd(
    plan: PlanArg = None,
    plan_opt: str | None = typer.Option(None, "--plan", help="Same as the PLAN argument."),
    run_dir: RunDirOpt = None,
    data_dir: DataDirOpt = None,
    tier: TierOpt = "full",
    subject_for: ForOpt = None,
    new: bool = typer.Option(
        False, "--new", help="Start a new run directory instead of resuming the plan's newest unfinished run."
    ),
    claims: Path | None = typer.Option(
        None,
        "--claims",
        help="Claims YAML (docs/reference/claims.md): signed into the bundle; each claim must name a measured point.",
    ),
    calibration: Path | None = typer.Option(
        None,
        "--calibration",
        help="A `byog calibrate` calibration.json of this plan on this hardware and software: its launch "
        "variance widens the CIs of one-launch comparisons.",
    ),
    as_json: JsonOpt = False,
) -> None:
    """Launch every server of the plan, run its sweeps and evals, derive the verdict, write the run directory.

    Without --run-dir, the newest unfinished run of the same plan under the runs folder resumes
    (an edited plan keeps every record whose inputs it did not change); --new starts over.
    """
    if new and run_dir is not None:
        raise UsageError("--new and --run-dir name two different run directories: give one")
    from byog.pipeline.run import run_plan

    result = run_plan(
        plan_opt or plan,
        run_dir=run_dir,
        reporter=reporter(as_json),
        data_dir=data_dir,
        tier=tier,
        subject=subject_for,
        new=new,
        claims=claims,
        calibration=calibration,
    )
    if as_json:
        print_json(result)


def calibrate_cmd(
    plan: PlanArg = None,
    run_dir: RunDirOpt = None,
    data_dir: DataDirOpt = None,
    tier: TierOpt = "full",
    launches: int | None = typer.Option(
        None, "--launches", min=3, help="Launches per server (default: the plan's, at least 3)."
    ),
    as_json: JsonOpt = False,
) -> None:
    """A/A calibration: launch every server of the plan R >= 3 times (ABBA rounds, bench only) and
    record the launch-to-launch variance per point and metric, with the hardware/software fingerprint."""
    from byog.pipeline.calibrate import calibrate

    result = calibrate(plan, run_dir, reporter(as_json), data_dir, tier, launches)
    if as_json:
        print_json(result)


def serve_cmd(
    plan: PlanArg = None,
    server: Annotated[str | None, server_option("Which server config to start (default: the baseline).")] = None,
    run_dir: Annotated[
        Path | None,
        run_dir_option("Where server.json and the log go (default: serve under BYOG_RUNS_DIR, else runs/serve)."),
    ] = None,
) -> None:
    """Start one server config of a plan and keep it up until Ctrl-C (for byog bench/eval --endpoint)."""
    from byog.pipeline.serve import serve_until_interrupted

    serve_until_interrupted(plan, server, run_dir, reporter())


def derive_cmd(run_dir: Path = typer.Argument(..., help="A run directory."), as_json: JsonOpt = False) -> None:
    """Re-derive summary.json and report.md from a run directory's raw records."""
    from byog.pipeline.derive import derive_and_write

    summary = derive_and_write(run_dir, reporter(as_json))
    if as_json:
        print_json(summary.to_json())


def plan_cmd(
    plan: PlanArg = None,
    from_run: Path | None = typer.Option(
        None,
        "--from-run",
        help="An earlier run directory or bundle: use its measured start-up and TPOT per point, and its per-item "
        "eval data for the planned power (default for evals: the newest smoke-tier run of this plan under runs/).",
    ),
    tier: TierOpt = "full",
    details: bool = typer.Option(
        False, "--details", help="Also every bench point, launch command, srun line, KV cache row and eval design."
    ),
    as_json: JsonOpt = False,
) -> None:
    """Show a plan's wall time, GPU-hours, each tier's cost, the largest items and every assumption;
    --details adds the expanded matrix and each server's launch commands."""
    from byog.pipeline.planview import plan_overview

    overview = plan_overview(plan, tier, from_run)
    if as_json:
        print_json(overview)
    elif details:
        render_plan_overview(overview)
        render_first_screen(overview, details=True)
    else:
        render_first_screen(overview)


# --- rendering ------------------------------------------------------------------------------


def _render_kv(kv: dict[str, Any]) -> None:
    """The KV cache each point needs per GPU (byog.plans.kv_memory), when the model config is readable here."""
    if not kv["checked"]:
        console.print(Text(kv["note"], style="yellow"), highlight=False)
        return
    table = Table(
        f"KV cache per GPU ({kv['note']})",
        ["server", "point", "TP", "DCP", "tokens/seq", "B", "needed GiB", "budget GiB", "max B", "fits"],
        right={"TP", "DCP", "tokens/seq", "B", "needed GiB", "budget GiB", "max B"},
    )
    for r in kv["rows"]:
        fits = "not stated" if r["fits"] is None else ("yes" if r["fits"] else "NO")
        table = table.with_row(
            r["server"],
            r["point_id"],
            str(r["tp"]),
            str(r["dcp"]),
            str(r["tokens"]),
            str(r["batch"]),
            f"{r['needed_gib']:.3g}",
            "–" if r["budget_gib"] is None else f"{r['budget_gib']:.3g}",
            "–" if r["max_batch"] is None else str(r["max_batch"]),
            fits,
        )
    print_table(console, table)
    for caveat in kv.get("caveats") or []:
        console.print(Text.assemble(("KV caveat:", "yellow"), f" {caveat}"), highlight=False)


def _render_numerics_cost(rows: list[dict[str, Any]]) -> None:
    """The sensitivity control and envelope variant each baseline adds to the numerics section."""
    from byog.plans.numerics_menu import platform_defaults

    for r in rows:
        if r["extra_launch"]:
            passes = f" + one numerics pass ({r['pass_s']:.0f} s in --from-run)" if r["pass_s"] is not None else ""
            cost = f"one more server start (~{r['startup_s']:.0f} s){passes}"
        else:
            cost = f"no extra start: it is the plan's server '{r['server']}'"
        console.print(
            Text.assemble("numerics ", (r["role"], "bold"), f" of {r['baseline']}: {r['server']}, {cost}"),
            highlight=False,
        )
        if r.get("why"):
            console.print(f"  which and why: {r['why']}", highlight=False, soft_wrap=True, markup=False)
            console.print(f"  defaults by platform: {platform_defaults()}", highlight=False, markup=False)
        if r["command"]:
            console.print(f"  {r['command']}", highlight=False, soft_wrap=True, markup=False)


def _render_time_parts(overview: PlanOverview) -> None:
    """Each server's start-up in its parts, the evals' time, and what an interleaved pair costs and saves."""
    table = Table(
        "start-up estimate per server: weights per rank / load rate + compile + graph capture + rest; a relaunch "
        "(launch 2 and up): the assumptions' relaunch line",
        ["server", "GiB/rank", "GiB/s", "load s", "compile s", "capture s", "rest s", "total s", "relaunch s", "from"],
        right={"GiB/rank", "GiB/s", "load s", "compile s", "capture s", "rest s", "total s", "relaunch s"},
    )
    for s in overview["servers"]:
        p = s["startup_parts"]
        gib = "?" if p["weights_gib_per_rank"] is None else f"{p['weights_gib_per_rank']:.1f}"
        table = table.with_row(
            s["server"],
            gib,
            f"{p['load_rate_gib_s']:.2f}",
            f"{p['load_s']:.0f}",
            f"{p['compile_s']:.0f}",
            f"{p['graph_capture_s']:.0f}",
            f"{p['other_s']:.0f}",
            f"{p['total_s']:.0f}",
            f"{p['restart_s']:.0f}" if s["launches"] > 1 else "-",
            p["source"],
        )
    print_table(console, table)
    if overview["eval_time"]:
        evals = Table(
            "eval estimate: ceil(requests / concurrency) x (TTFT + expected tokens x TPOT); with looks, the "
            "expected share of the items (servers equivalent / one margin apart) and the minutes at the first",
            [
                "server",
                "task",
                "requests",
                "concurrency",
                "expected tokens",
                "TPOT ms",
                "est. min",
                "share",
                "exp. min",
            ],
            right={"requests", "concurrency", "expected tokens", "TPOT ms", "est. min", "share", "exp. min"},
        )
        for e in overview["eval_time"]:
            evals = evals.with_row(
                e["server"],
                e["task"],
                str(e["requests"]),
                str(e["concurrency"]),
                str(e["expected_tokens"]),
                f"{e['tpot_s'] * 1e3:.1f}",
                f"{e['estimate_s'] / 60:.1f}",
                f"{stop['identical']:.2f} / {stop['at_margin']:.2f}" if (stop := e["early_stop"]) else "all",
                f"{e['expected_s'] / 60:.1f}",
            )
        print_table(console, evals)
    bench_s = overview["total_estimate_s"]
    evals_s, expected_s = overview["evals_total_s"], overview["evals_expected_s"]
    console.print(
        Text.assemble(
            "estimated wall time with evals: ",
            (_expected_or_most(bench_s + expected_s, bench_s + evals_s), "bold"),
            f" (bench {bench_s / 60:.1f} min + evals {_expected_or_most(expected_s, evals_s)}; numerics starts below)",
        ),
        highlight=False,
    )
    for row in overview["interleave"]:
        console.print(
            f"interleaved {row['pair'][0]} vs {row['pair'][1]}: {row['swaps']} swaps x {row['swap_s']:.1f} s = "
            f"{row['swaps_total_s']:.0f} s; against a second sequential launch of each (the drift guard it "
            f"replaces) it saves {row['saves_s']:.0f} s of start-up",
            highlight=False,
        )


def _render_points(overview: PlanOverview) -> None:
    table = Table(
        f"plan '{overview['plan']}': {len(overview['points'])} bench points",
        ["server", "point", "load", "ISL", "OSL", "requests", "TPOT ms", "est. s", "from"],
        right={"ISL", "OSL", "requests", "TPOT ms", "est. s"},
    )
    for r in overview["points"]:
        table = table.with_row(
            r["server"],
            r["point_id"],
            r["load"],
            str(r["isl"]),
            str(r["osl"]),
            str(r["requests"]),
            f"{r['tpot_s'] * 1e3:.1f}",
            f"{r['estimate_s']:.0f}",
            r["source"],
        )
    print_table(console, table)


def _render_servers(overview: PlanOverview) -> None:
    """Each server's launch command and estimate, then the bench total."""
    for s in overview["servers"]:
        launches = f", {s['launches']} launches" if s.get("launches", 1) > 1 else ""
        console.print(
            Text.assemble(
                (s["server"], "bold"),
                f" ({s['runtime']}, {s['gpus']} GPU(s), start-up {s['startup_s']:.0f} s{launches}, "
                f"{s['estimate_s'] / 60:.1f} min):",
            ),
            highlight=False,
        )
        console.print(f"  {s['command']}", highlight=False, soft_wrap=True, markup=False)
    console.print(
        Text.assemble(
            "estimated bench wall time: ",
            (f"{overview['total_estimate_s'] / 60:.1f} min", "bold"),
            f", {overview['gpu_hours']:.2f} GPU-hours ({overview['note']})",
        ),
        highlight=False,
    )


def _render_launch_scripts(overview: PlanOverview) -> None:
    if overview["per_node_launch"]:
        console.print(
            Text.assemble(
                ("per-node launch", "bold"),
                " (servers with 'nodes', as planned):",
            ),
            highlight=False,
        )
        for lines in overview["per_node_launch"].values():
            for line in lines:
                console.print(line, highlight=False, soft_wrap=True, markup=False)
    if overview["slurm_batch"]:
        console.print(
            Text.assemble(("slurm batch script", "bold"), " (`byog slurm submit` writes it; options change it):"),
            highlight=False,
        )
        console.print(overview["slurm_batch"], highlight=False, soft_wrap=True, markup=False, end="")


def _expected_or_most(expected_s: float, most_s: float, short: bool = False) -> str:
    """'10.1 h expected, 11.5 h at most' where a plan's looks may stop evals early, else '11.5 h'."""
    if most_s - expected_s < 0.5:
        return duration(most_s)
    if short:
        return f"{duration(expected_s)} (≤ {duration(most_s)})"
    return f"{duration(expected_s)} expected, {duration(most_s)} at most"


def _wall_and_gpu_hours(overview: PlanOverview) -> str:
    """'11.5 h wall, 148 GPU-hours', or with looks that may stop evals early '10.8 h wall expected, 11.5 h
    at most, 148 GPU-hours at most'."""
    wall, expected, gpu_h = overview["wall_s"], overview["wall_expected_s"], decimal(overview["wall_gpu_hours"], 3)
    if wall - expected < 0.5:
        return f"{duration(wall)} wall, {gpu_h} GPU-hours"
    return f"{duration(expected)} wall expected, {duration(wall)} at most, {gpu_h} GPU-hours at most"


def _render_tiers(overview: PlanOverview) -> None:
    stops = any(t["wall_s"] - t["wall_expected_s"] >= 0.5 for t in overview["tiers"])
    tiers = Table(
        "tiers: wall time (bench + evals: one server at a time, or two at once on GPUs of their own) and GPU-hours"
        + (" (evals and wall: expected if the servers are equivalent, (≤ at most))" if stops else ""),
        ["tier", "servers", "bench points", "eval requests", "max GPUs", "bench", "evals", "wall", "GPU-hours"],
        right={"servers", "bench points", "eval requests", "max GPUs", "bench", "evals", "wall", "GPU-hours"},
    )
    for t in overview["tiers"]:
        mark = " <" if t["tier"] == overview["tier"] else ""
        tiers = tiers.with_row(
            t["tier"] + mark,
            str(t["servers"]),
            str(t["bench_points"]),
            str(t["eval_requests"]),
            str(t["max_gpus"]),
            duration(t["estimate_s"]),
            _expected_or_most(t["evals_expected_s"], t["evals_s"], short=True),
            _expected_or_most(t["wall_expected_s"], t["wall_s"], short=True),
            decimal(t["wall_gpu_hours"], 3),
        )
    print_table(console, tiers)


def render_first_screen(overview: PlanOverview, details: bool = False) -> None:
    """What a plan costs and what that rests on: the wall time, GPU-hours, each tier, the three largest
    items and every assumption."""
    bench_s, evals_s = overview["total_estimate_s"], overview["evals_total_s"]
    console.print(
        Text.assemble(
            f"plan '{overview['plan']}', tier {overview['tier']}: ",
            (_wall_and_gpu_hours(overview), "bold"),
            f" (bench {duration(bench_s)}: {len(overview['points'])} points on {len(overview['servers'])} "
            f"servers with their start-ups; evals {_expected_or_most(overview['evals_expected_s'], evals_s)}: "
            f"{len(overview['eval_time'])} server x task)",
        ),
        highlight=False,
    )
    _render_tiers(overview)
    console.print("largest items:", highlight=False)
    for n, item in enumerate(overview["largest"], 1):
        share = item["expected_seconds"] / overview["wall_expected_s"] if overview["wall_expected_s"] else 0.0
        console.print(
            f"  {n}. {item['what']}: {_expected_or_most(item['expected_seconds'], item['seconds'])} ({share:.0%})",
            highlight=False,
            markup=False,
        )
    console.print("assumptions:", highlight=False)
    for said in overview["assumptions"]:
        console.print(f"  - {said}", highlight=False, markup=False, soft_wrap=True)
    if overview["placeholders"]:
        console.print(
            Text.assemble(
                ("to set before a run: ", "yellow"), f"{len(overview['placeholders'])} placeholder value(s) (--details)"
            ),
            highlight=False,
        )
    if overview["not_checked"] and not details:
        console.print(
            Text.assemble(
                ("not checked before launch: ", "yellow"), f"{len(overview['not_checked'])} thing(s) (--details)"
            ),
            highlight=False,
        )
    if not details:
        console.print("every point, launch command and eval design: --details", highlight=False)


def _render_placeholders(overview: PlanOverview) -> None:
    """Placeholder values still to set, each with where it occurs."""
    places: dict[str, list[str]] = {}
    for item in overview["placeholders"]:
        where, value = item.split(": ", 1)
        places.setdefault(value, []).append(where)
    for value, wheres in places.items():
        console.print(
            Text.assemble(("to set before a run: ", "yellow"), f"{value} in {', '.join(wheres)}"),
            highlight=False,
            soft_wrap=True,
        )


def render_plan_summary(overview: PlanOverview) -> None:
    """One screen of `byog plan`: each server's launch and estimate, the pairs, every tier's cost, what to set."""
    _render_servers(overview)
    console.print("pairs: " + ", ".join(f"{c} vs {b}" for c, b in overview["pairs"]), highlight=False)
    _render_tiers(overview)
    _render_placeholders(overview)


def render_plan_overview(overview: PlanOverview) -> None:
    _render_points(overview)
    _render_servers(overview)
    _render_launch_scripts(overview)
    _render_time_parts(overview)
    _render_kv(overview["kv_cache"])
    console.print("pairs: " + ", ".join(f"{c} vs {b}" for c, b in overview["pairs"]), highlight=False)
    _render_perf_ci(overview["perf_ci"])
    _render_numerics_cost(overview.get("numerics") or [])
    render_eval_power(overview["evals"], overview["tier"], overview["eval_prior"])
    _render_placeholders(overview)
    for note in overview["not_checked"]:
        console.print(Text.assemble(("not checked before launch: ", "yellow"), note), highlight=False, soft_wrap=True)


def _render_perf_ci(rows: list[dict[str, Any]]) -> None:
    """Per group of pairs alike: R, the perf CI it gives and the coverage that buys (docs/statistics.md §6)."""
    groups: dict[str, list[str]] = {}
    for r in rows:
        (r_c, r_b), coverage = r["launches"], r["coverage"]
        covered = "/".join(f"{v:.0%}" for v in coverage.values())
        if r["df"] is None:
            how = f"95% CI from {r['ci']}"
            tail = "perf labels: screening; `launches: 2` or more (or `byog run --calibration`) puts it in"
        else:
            how, tail = f"95% CI: launch t interval ({r['df']} df)", "ABBA launch order"
        said = (
            f"R = {r_c} candidate / {r_b} baseline launches; {how}; simulated coverage {covered} at between-launch "
            f"share {'/'.join(coverage)} ({r['waves']} waves per launch); {tail}"
        )
        only = f" ({', '.join(r['workloads'])})" if r.get("workloads") else ""
        groups.setdefault(said, []).append(" vs ".join(r["pair"]) + only)
    for said, pairs in groups.items():
        console.print(f"perf CI, {', '.join(pairs)}: {said}", highlight=False, soft_wrap=True)


def render_eval_power(rows: list[dict[str, Any]], current: str, prior: str | None = None) -> None:
    """Per tier and eval: the design, the predicted false-fail rate and power, sound or screening."""
    if not rows:
        return
    table = Table(
        "evals: planned false-fail (identical servers not equivalent) and power (a one-margin "
        "drop flagged); sound = false-fail <= 5%, else the verdict is screening (docs/statistics.md)",
        ["tier", "task", "items x passes", "decoding", "margin", "false-fail", "power", "gate", "model"],
        right={"margin", "false-fail", "power"},
    )
    for r in rows:
        mark = " <" if r["tier"] == current else ""
        model = r["model"]
        source = "prior" if model["source"] == "prior" else "fitted"
        described = f"{source} mu={model['accuracy']:.2f} k={model['concentration']:.2g}"
        if r["decoding"] == "greedy":
            described += f" redraw={model['redraw']:.2f}"
        table = table.with_row(
            r["tier"] + mark,
            r["task"],
            f"{r['n']} x {r['passes']}",
            r["decoding"],
            f"{r['margin']:g}",
            f"{r['false_fail']:.1%}",
            f"{r['power']:.1%}",
            "sound" if r["sound"] else "screening",
            described,
        )
    print_table(console, table)
    for r in rows:
        if r["tier"] == current and r.get("strata"):
            st = r["strata"]
            console.print(
                f"{r['task']} at operating points {'/'.join(map(str, st['points']))} (~{st['items_per_point']} items "
                f'each): "accuracy depends on the batch: no" has {st["no_power"]:.0%} planned power if it does not '
                "(docs/statistics.md §1b)",
                highlight=False,
                soft_wrap=True,
            )
    if prior:
        console.print(f"eval model: {prior}", highlight=False, soft_wrap=True)
