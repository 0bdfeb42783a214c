"""`byog run`: the one-way pipeline of DESIGN.md.

Plan -> prepare the model -> for each server config: launch, bench points, evals, stop ->
summary.json and report.md derived from the raw records -> manifest, signature, bundle.

Every raw record is written atomically as it is produced, so an interrupted run keeps what it
finished and ``byog run --run-dir runs/<id>`` picks up where it stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any, Iterator

from rich.console import Console
from rich.table import Table

from byog.bundles.rundir import RunDir, new_run_id
from byog.errors import UsageError
from byog.images.runtime import PreparedModel, RunningServer
from byog.ioutil import atomic_write_json, atomic_write_text
from byog.plans.load import load_plan, parse_plan
from byog.plans.model import Plan, ServerConfig

RUNS_DIR_ENV = "BYOG_RUNS_DIR"


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt so every `finally` that stops a server still runs."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def open_run_dir(plan_ref: str | None, run_dir: Path | None, tier: str = "full") -> tuple[Plan, RunDir]:
    """Create a new run directory, or reopen one to resume (its plan.yaml must match).

    The plan recorded is the plan as run: with a tier other than ``full`` that is the cut-down
    plan, because verify re-derives the points from plan.yaml.
    """
    if run_dir is not None and (run_dir / "plan.yaml").is_file():
        recorded = (run_dir / "plan.yaml").read_text(encoding="utf-8")
        if plan_ref is not None and _plan_text(plan_ref, tier)[1] != recorded:
            raise UsageError(f"{run_dir} holds a run of a different plan or tier; pick a new --run-dir to start over")
        return parse_plan(recorded, str(run_dir / "plan.yaml")), RunDir(run_dir)
    plan, text = _plan_text(plan_ref, tier)
    _check_before_start(plan, plan_ref)
    root = run_dir or Path(os.environ.get(RUNS_DIR_ENV, "runs")) / new_run_id()
    if root.exists() and any(root.iterdir()):
        raise UsageError(f"{root} exists and is not a byog run directory (no plan.yaml); pick another --run-dir")
    rd = RunDir(root)
    atomic_write_text(rd.plan_yaml, text)
    return plan, rd


def _plan_text(plan_ref: str | None, tier: str) -> tuple[Plan, str]:
    from byog.plans.tiers import apply_tier, tiered_plan_yaml

    plan, text = load_plan(plan_ref)
    if tier == "full":
        return plan, text  # recorded verbatim, comments and all
    tiered = apply_tier(plan, tier)
    return tiered, tiered_plan_yaml(tiered)


def _check_before_start(plan: Plan, plan_ref: str | None) -> None:
    """Everything that can be refused without launching: refuse it before a run directory exists."""
    from byog.images.models import check_model_reference
    from byog.plans.expand import check_plan_fits

    from byog.plans.tiers import require_no_placeholders

    where = plan_ref or "the smoke profile"
    require_no_placeholders(plan)
    check_model_reference(plan.model, where=where)
    try:
        check_plan_fits(plan)
    except UsageError as err:
        raise UsageError(f"{where}: {err}") from None


def runtime_for(config: ServerConfig) -> Any:
    if config.runtime == "local":
        from byog.images.local import LocalRuntime

        return LocalRuntime()
    if config.runtime == "docker":
        from byog.images.docker import DockerRuntime

        return DockerRuntime()
    from byog.images.endpoint import EndpointRuntime

    return EndpointRuntime()


def server_work_done(plan: Plan, server: str, rd: RunDir) -> bool:
    from byog.plans.expand import expand_plan

    points_done = all(rd.bench_point_complete(server, p.point_id) for p in expand_plan(plan) if server in p.servers)
    evals_done = all(rd.eval_complete(server, spec.task) for spec in plan.evals if server in plan.servers_for(spec))
    return points_done and evals_done


def run_server(plan: Plan, name: str, model: PreparedModel, rd: RunDir, data_dir: Path | None, console: Console) -> None:
    from byog.bench.sweep import run_bench_for_server
    from byog.evals.runner import run_evals_for_server

    config = plan.servers[name]
    with console.status(f"[bold]{name}[/]: starting vLLM ({config.runtime} runtime)…"):
        server: RunningServer = runtime_for(config).launch(name, config, model, rd.server_dir(name))
    try:
        console.print(f"[bold]{name}[/]: up at {server.endpoint.base_url}")
        run_bench_for_server(plan, name, server, rd, console, data_dir=data_dir)
        run_evals_for_server(plan, name, server.endpoint, rd, data_dir, console)
    finally:
        with console.status(f"[bold]{name}[/]: stopping"):
            server.stop()


def derive_and_write(run_dir: Path, console: Console | None = None) -> dict[str, Any]:
    """summary.json and report.md from the raw records alone (what verify recomputes)."""
    from byog.bundles.report import render_report
    from byog.bundles.summary import derive_summary

    rd = RunDir(run_dir)
    if not rd.plan_yaml.is_file():
        raise UsageError(f"{run_dir} is not a byog run directory (no plan.yaml)")
    summary = derive_summary(rd)
    atomic_write_json(rd.summary_json, summary)
    atomic_write_text(rd.report_md, render_report(rd, summary))
    if console is not None:
        console.print(f"summary: {rd.summary_json}\nreport:  {rd.report_md}")
    return summary


def _print_outcome(summary: dict[str, Any], console: Console) -> None:
    comparisons = [c for c in summary.get("bench", {}).get("comparisons", []) if c.get("metric") == "decode_tok_s"]
    if comparisons:
        table = Table(title="decode tok/s, candidate / baseline")
        for column in ("point", "candidate", "baseline", "ratio", "95% CI", ""):
            table.add_column(column)
        for c in comparisons:
            ci = f"{c['ci_low']:.3f}–{c['ci_high']:.3f}" if c.get("ci_low") is not None else "—"
            table.add_row(
                c["point_id"], f"{c['candidate_value']:.1f}", f"{c['baseline_value']:.1f}",
                f"{c['ratio']:.3f}" if c.get("ratio") is not None else "—", ci,
                "within noise" if c.get("within_noise") else "",
            )
        console.print(table)
    verdicts = summary.get("evals", {}).get("verdicts", [])
    if verdicts:
        table = Table(title="accuracy, candidate − baseline (points)")
        for column in ("task", "pair", "n", "d", "SE", "margin", "verdict"):
            table.add_column(column)
        for v in verdicts:
            table.add_row(
                v["task"], f"{v['candidate']} vs {v['baseline']}", str(v["n"]),
                _fmt(v.get("d")), _fmt(v.get("se_d")), _fmt(v.get("margin")), v["verdict"],
            )
        console.print(table)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def run_plan(
    plan_ref: str | None, run_dir: Path | None, console: Console, data_dir: Path | None = None, tier: str = "full"
) -> dict[str, Any]:
    started = time.monotonic()
    plan, rd = open_run_dir(plan_ref, run_dir, tier)
    console.print(f"byog run: plan [bold]{plan.name}[/] -> {rd.root}")
    from byog.images.fingerprint import environment_fingerprint
    from byog.images.models import prepare_model

    if not rd.env_json.is_file():
        atomic_write_json(rd.env_json, environment_fingerprint())
    with console.status("preparing the model (the built-in default converts once, ~20 s)…"):
        model = prepare_model(plan.model)
    with sigterm_as_interrupt():
        for name in plan.servers:
            if server_work_done(plan, name, rd):
                console.print(f"[bold]{name}[/]: every point and eval is already complete; not launched")
                continue
            run_server(plan, name, model, rd, data_dir, console)
    summary = derive_and_write(rd.root, console)
    _print_outcome(summary, console)
    from byog.bundles.finalize import finalize_run

    bundle = finalize_run(rd, console)
    wall_s = time.monotonic() - started
    console.print(f"run directory: {rd.root}   wall time: {wall_s:.0f} s")
    return {"run_dir": str(rd.root), "bundle": str(bundle) if bundle else None, "wall_s": round(wall_s, 1), "summary": summary}


def serve_until_interrupted(plan_ref: str | None, server: str | None, run_dir: Path, console: Console) -> None:
    from byog.images.models import prepare_model

    plan, _ = load_plan(plan_ref)
    name = server or plan.baseline
    if name not in plan.servers:
        raise UsageError(f"plan '{plan.name}' has no server '{name}' (it has {', '.join(plan.servers)})")
    model = prepare_model(plan.model)
    config = plan.servers[name]
    rd = RunDir(run_dir)
    with sigterm_as_interrupt():
        with console.status(f"[bold]{name}[/]: starting vLLM…"):
            running = runtime_for(config).launch(name, config, model, rd.server_dir(name))
        try:
            console.print(f"[bold]{name}[/] is up: {running.endpoint.base_url}  model={running.endpoint.model}  "
                          f"tokenizer={running.endpoint.tokenizer}\nCtrl-C stops it.")
            while running.alive():
                time.sleep(1.0)
            console.print(f"[bold red]{name} exited[/]; last log lines:\n{running.log_tail()}")
        finally:
            running.stop()
