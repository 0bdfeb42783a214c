"""`byog calibrate PLAN`: the A/A calibration of launch-to-launch variance (docs/statistics.md §6).

The plan's servers are each launched R >= 3 times, in ABBA rounds (``byog.pipeline.run``), with
its bench points only (no evals, no numerics); calibration.json, written into the run directory,
holds per server, point and headline metric the spread of ln stat(launch) and the run's
fingerprint (``byog.analysis.calibration``). A later one-launch run of the same plan on the same
hardware, software and server configuration takes it with ``byog run --calibration FILE``.
"""

from __future__ import annotations

import datetime
import tempfile
from pathlib import Path
from typing import TypedDict

from byog.analysis.bench_summary import calibration_spreads
from byog.analysis.calibration import CALIBRATION_NAME, MIN_LAUNCHES, fingerprint
from byog.core.errors import UsageError
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter, Reporter
from byog.pipeline.opening import plan_text
from byog.pipeline.run import run_plan
from byog.plans.load import parse_plan
from byog.plans.tiers import tiered_plan_yaml
from byog.schemas.calibration import Calibration
from byog.schemas.plan import Plan


class CalibrateOutcome(TypedDict):
    run_dir: str
    calibration: str
    launches: int
    spreads: int


def calibration_plan_yaml(plan_ref: str | None, tier: str, launches: int | None) -> str:
    """The plan as calibrated: R = max(3, ``launches`` or the plan's) launches per server, bench only."""
    plan, _ = plan_text(plan_ref, tier)
    if not plan.workloads:
        raise UsageError(f"{plan_ref or 'the smoke profile'} has no bench workloads: there is nothing to calibrate")
    r = max(MIN_LAUNCHES, launches or plan.launches)
    data = plan.model_dump(mode="json", exclude_none=True)
    data.update(name=f"{plan.name}-calibration", launches=r, evals=[], aa_pair=False)
    for workload in data.get("workloads", []):  # every point on every launch: a spread needs two at least
        workload.pop("launches", None)
    data.pop("numerics", None)
    return tiered_plan_yaml(Plan.model_validate(data))


def calibrate(
    plan_ref: str | None,
    run_dir: Path | None,
    reporter: Reporter = NullReporter(),
    data_dir: Path | None = None,
    tier: str = "full",
    launches: int | None = None,
) -> CalibrateOutcome:
    text = calibration_plan_yaml(plan_ref, tier, launches)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "calibration-plan.yaml"
        path.write_text(text, encoding="utf-8")
        outcome = run_plan(str(path), run_dir, reporter, data_dir)
    rd = RunDir(Path(outcome["run_dir"]))
    plan = parse_plan(rd.plan_yaml.read_text(encoding="utf-8"), str(rd.plan_yaml))
    spreads = calibration_spreads(rd, plan)
    record = Calibration(
        created_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        plan_name=plan.name,
        launches=plan.launches,
        fingerprint=fingerprint(rd, plan),
        spreads=spreads,
    )
    target = rd.root / CALIBRATION_NAME
    atomic_write_json(target, record.model_dump(mode="json"))
    reporter.line(
        f"calibration: {len(spreads)} launch spreads over {plan.launches} launches per server -> {target}; "
        f"use it with: byog run PLAN --calibration {target}"
    )
    return {"run_dir": str(rd.root), "calibration": str(target), "launches": plan.launches, "spreads": len(spreads)}
