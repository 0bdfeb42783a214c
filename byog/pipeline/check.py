"""``byog check numerics`` and ``byog check conformance``: only the numerics section of a plan.

Each server of a comparison pair is launched in turn (baselines first), runs the numerics
passes or the conformance suite, and is stopped; then summary.json and report.md are derived
from the run directory as ``byog run`` would (no bundle is sealed: a check is a diagnosis). A
plan without a ``numerics:`` section uses its defaults. The outcome gates: exit 1 when a
candidate is not "numerically equivalent" or fails a conformance check its baseline passes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from byog.core.errors import CheckFailed
from byog.core.io import atomic_write_json, read_json
from byog.core.reporter import Reporter
from byog.images.fingerprint import environment_fingerprint
from byog.images.models import prepare_model
from byog.pipeline.derive import derive_and_write
from byog.pipeline.launch import launch_server
from byog.pipeline.numerics import (
    references,
    run_conformance_checks,
    run_numerics,
    runs_conformance,
    server_order,
    skipped_as_insensitive,
)
from byog.pipeline.opening import open_run_dir
from byog.pipeline.run import print_numerics
from byog.pipeline.signals import sigterm_as_interrupt
from byog.plans.numerics_roles import launch_config, resolve_control
from byog.schemas.summary import Summary

What = Literal["numerics", "conformance"]


def check_plan(
    plan_ref: str | None,
    run_dir: Path | None,
    reporter: Reporter,
    what: What,
    data_dir: Path | None = None,
    tier: str = "full",
) -> Summary:
    plan, rd = open_run_dir(plan_ref, run_dir, tier)
    reporter.line(f"byog check {what}: plan {plan.name} -> {rd.root}")
    if not rd.env_json.is_file():
        atomic_write_json(rd.env_json, environment_fingerprint())
    plan = resolve_control(plan, read_json(rd.env_json))
    refs = references(plan)
    with reporter.status("preparing the model…"):
        model = prepare_model(plan.model)
    with sigterm_as_interrupt():
        for name in server_order(plan, numerics=True):
            if name not in refs or (what == "conformance" and not runs_conformance(plan, name)):
                continue
            if what == "numerics" and skipped_as_insensitive(plan, name, rd):
                why = f": not launched: its baseline '{refs[name]}' is insensitive"
                reporter.line(why, lead=name)
                continue
            done = rd.numerics_complete(name) if what == "numerics" else rd.conformance_record(name).is_file()
            if done:
                reporter.line(f": {what} already complete; not launched", lead=name)
                continue
            config = launch_config(plan, name)
            with reporter.status(f": starting vLLM ({config.runtime} runtime)…", lead=name):
                server = launch_server(plan, name, model, rd)
            try:
                if what == "numerics":
                    run_numerics(plan, name, server.endpoint, rd, data_dir, reporter)
                else:
                    run_conformance_checks(plan, name, server.endpoint, rd, reporter)
            finally:
                with reporter.status(": stopping", lead=name):
                    server.stop()
    summary = derive_and_write(rd.root, reporter)
    print_numerics(summary, reporter)
    numerics = summary.numerics
    if numerics is not None:
        if what == "numerics":
            bad = [f"{c.candidate}: {c.verdict}" for c in numerics.comparisons if c.verdict != "numerically equivalent"]
        else:
            bad = [
                f"{p.candidate}: {r.check}: {r.reason}"
                for p in numerics.conformance
                for r in p.checks
                if r.outcome == "fail"
            ]
        if bad:
            raise CheckFailed(f"{what}: " + "; ".join(bad))
    return summary
