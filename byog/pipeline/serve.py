"""``byog serve``: start one server config of a plan and keep it up until Ctrl-C."""

from __future__ import annotations

import time
from pathlib import Path

from byog.core.errors import UsageError
from byog.core.paths import RunDir
from byog.core.reporter import Reporter
from byog.core.settings import runs_dir
from byog.images.models import prepare_model
from byog.pipeline.launch import launch_server
from byog.pipeline.signals import sigterm_as_interrupt
from byog.plans.load import load_plan


def serve_until_interrupted(plan_ref: str | None, server: str | None, run_dir: Path | None, reporter: Reporter) -> None:
    """``run_dir`` None: ``serve`` under the runs folder (``$BYOG_RUNS_DIR``, else ./runs)."""
    plan, _ = load_plan(plan_ref)
    name = server or plan.baseline
    if name not in plan.servers:
        raise UsageError(f"plan '{plan.name}' has no server '{name}' (it has {', '.join(plan.servers)})")
    model = prepare_model(plan.model)
    rd = RunDir(run_dir or runs_dir() / "serve")
    with sigterm_as_interrupt():
        with reporter.status(": starting vLLM…", lead=name):
            running = launch_server(plan, name, model, rd)
        try:
            reporter.line(
                f" is up: {running.endpoint.base_url}  model={running.endpoint.model}  "
                f"tokenizer={running.endpoint.tokenizer}",
                lead=name,
            )
            reporter.line("Ctrl-C stops it.")
            while running.alive():
                time.sleep(1.0)
            reporter.line(f"; last log lines:\n{running.log_tail()}", lead=f"{name} exited", style="error")
        finally:
            running.stop()
