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
from byog.pipeline.preflight import preflight
from byog.pipeline.resume import keep_unchanged, newest_unfinished
from byog.plans.load import parse_plan, plan_source, plan_text_of
from byog.plans.pin import make_pin
from byog.plans.tiers import apply_tier, tiered_plan_yaml
from byog.schemas.claims import Claim
from byog.schemas.plan import Plan
from byog.schemas.plan_pin import PLAN_PIN_NAME, PlanPin


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
    plan, text, pin = pinned_plan(plan_ref, tier)
    check_before_start(plan, plan_ref)
    return plan, _new_run_dir(text, pin, run_dir)


def _new_run_dir(text: str, pin: PlanPin, run_dir: Path | None) -> RunDir:
    root = run_dir or runs_dir() / new_run_id()
    if root.exists() and any(root.iterdir()):
        raise UsageError(f"{root} exists and is not a byog run directory (no plan.yaml); pick another --run-dir")
    rd = RunDir(root)
    # Pinned before anything runs: verify --plan holds the bundle to the plan file of the PR's tree.
    atomic_write_json(rd.root / PLAN_PIN_NAME, pin.model_dump(mode="json"))
    atomic_write_text(rd.plan_yaml, text)
    return rd


def open_or_resume(
    plan_ref: str | None,
    run_dir: Path | None,
    tier: str = "full",
    *,
    new: bool = False,
    claims: list[Claim] | None = None,
    data_dir: Path | None = None,
) -> tuple[Plan, RunDir, list[str]]:
    """``byog run``'s run directory and what to say about it: without ``run_dir`` (and without
    ``new``) the newest unfinished run of the same plan, resumed; an existing one whose plan was
    edited keeps every record the edit left unchanged (``byog.pipeline.resume``)."""
    said: list[str] = []
    if run_dir is None and not new:
        plan, _ = plan_text(plan_ref, tier)
        run_dir = newest_unfinished(plan.name)
        if run_dir is not None:
            said.append(f"resuming {run_dir}, the newest unfinished run of plan '{plan.name}' (--new starts over)")
    existing = run_dir is not None and (run_dir / "plan.yaml").is_file()
    if existing and plan_ref is None and not said:  # `--run-dir` alone: the plan recorded there
        plan, rd = open_run_dir(None, run_dir, tier)
        return plan, rd, said
    plan, text, pin = pinned_plan(plan_ref, tier)
    said += [f"not checked before launch: {note}" for note in check_before_start(plan, plan_ref, claims, data_dir)]
    if run_dir is None or not existing:
        return plan, _new_run_dir(text, pin, run_dir), said
    rd = RunDir(run_dir)
    recorded = rd.plan_yaml.read_text(encoding="utf-8")
    if text != recorded:
        said += keep_unchanged(rd, parse_plan(recorded, str(rd.plan_yaml)), plan, text)
        atomic_write_json(rd.root / PLAN_PIN_NAME, pin.model_dump(mode="json"))  # the edited plan is what runs on
    return plan, rd, said


def plan_text(plan_ref: str | None, tier: str) -> tuple[Plan, str]:
    plan, text, _ = pinned_plan(plan_ref, tier)
    return plan, text


def pinned_plan(plan_ref: str | None, tier: str) -> tuple[Plan, str, PlanPin]:
    """The plan as run, its text as recorded, and the pin of the plan file it came from (``byog.plans.pin``)."""
    source, data = plan_source(plan_ref)
    written = plan_text_of(data, source)
    plan, text = _as_run(parse_plan(written, source), written, tier)
    return plan, text, make_pin(source, data, yaml.safe_load(written), tier, text)


def _as_run(plan: Plan, text: str, tier: str) -> tuple[Plan, str]:
    if tier == "full":
        return plan, text  # recorded verbatim, comments and all
    tiered = apply_tier(plan, tier)
    return tiered, tiered_plan_yaml(tiered)


def check_before_start(
    plan: Plan, plan_ref: str | None, claims: list[Claim] | None = None, data_dir: Path | None = None
) -> list[str]:
    """Everything that can be refused without launching, refused before a run directory exists;
    returns what could not be checked before launch (``byog.pipeline.preflight``)."""
    where = plan_ref or "the smoke profile"
    return preflight(plan, where, for_run=True, env=environment_fingerprint(), claims=claims, data_dir=data_dir)
