"""Opening a run directory: a new one after every pre-start check, or an existing one to resume.

`byog run`, `byog check` and `byog slurm submit` all open run directories the same way; this module
is below all three, so none borrows it from another.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from byog.core.errors import UsageError
from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir, new_run_id
from byog.core.settings import runs_dir
from byog.images.fingerprint import environment_fingerprint
from byog.images.models import check_model_reference
from byog.pipeline.interleave_check import check_interleave
from byog.pipeline.kv_overview import check_plan_kv
from byog.plans.expand import check_plan_fits
from byog.plans.load import load_plan, parse_plan, plan_source, plan_text_of
from byog.plans.numerics_roles import check_stock_roles, resolve_control
from byog.plans.pin import make_pin
from byog.plans.tiers import apply_tier, require_no_placeholders, tiered_plan_yaml
from byog.schemas.plan import Plan
from byog.schemas.plan_pin import PLAN_PIN_NAME


def open_run_dir(plan_ref: str | None, run_dir: Path | None, tier: str = "full") -> tuple[Plan, RunDir]:
    """Create a new run directory, or reopen one to resume (its plan.yaml must match).

    The plan recorded is the plan as run: with a tier other than ``full`` that is the cut-down
    plan, because verify re-derives the points from plan.yaml.
    """
    if run_dir is not None and (run_dir / "plan.yaml").is_file():
        recorded = (run_dir / "plan.yaml").read_text(encoding="utf-8")
        if plan_ref is not None and plan_text(plan_ref, tier)[1] != recorded:
            raise UsageError(f"{run_dir} holds a run of a different plan or tier; pick a new --run-dir to start over")
        return parse_plan(recorded, str(run_dir / "plan.yaml")), RunDir(run_dir)
    source, data = plan_source(plan_ref)
    written = plan_text_of(data, source)
    plan, text = _as_run(parse_plan(written, source), written, tier)
    check_before_start(plan, plan_ref)
    root = run_dir or runs_dir() / new_run_id()
    if root.exists() and any(root.iterdir()):
        raise UsageError(f"{root} exists and is not a byog run directory (no plan.yaml); pick another --run-dir")
    rd = RunDir(root)
    # Pinned before anything runs: verify --plan holds the bundle to the plan file of the PR's tree.
    pin = make_pin(source, data, yaml.safe_load(written), tier, text)
    atomic_write_json(rd.root / PLAN_PIN_NAME, pin.model_dump(mode="json"))
    atomic_write_text(rd.plan_yaml, text)
    return plan, rd


def plan_text(plan_ref: str | None, tier: str) -> tuple[Plan, str]:
    plan, text = load_plan(plan_ref)
    return _as_run(plan, text, tier)


def _as_run(plan: Plan, text: str, tier: str) -> tuple[Plan, str]:
    if tier == "full":
        return plan, text  # recorded verbatim, comments and all
    tiered = apply_tier(plan, tier)
    return tiered, tiered_plan_yaml(tiered)


def check_before_start(plan: Plan, plan_ref: str | None) -> None:
    """Everything that can be refused without launching: refuse it before a run directory exists."""
    where = plan_ref or "the smoke profile"
    require_no_placeholders(plan)
    check_model_reference(plan.model, where=where)
    try:
        check_plan_fits(plan)
        check_plan_kv(plan)
        check_stock_roles(resolve_control(plan, environment_fingerprint()))
        check_interleave(plan)
    except UsageError as err:
        raise UsageError(f"{where}: {err}") from None
