"""`byog calibrate` and `byog run --calibration` on synthetic run directories: the calibration plan,
the spreads of a three-launch A/A, and a one-launch run that takes them only on its own fingerprint."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.analysis.bench_summary import calibration_spreads
from byog.analysis.calibration import CALIBRATION_NAME, CalibrationError, fingerprint
from byog.analysis.summary import derive_summary, plan_of
from byog.core.io import atomic_write_json, read_json
from byog.pipeline.calibrate import calibration_plan_yaml
from byog.pipeline.run import adopt_calibration
from byog.plans.load import parse_plan
from byog.schemas.calibration import Calibration
from tests.support.reporter import RecordingReporter
from tests.support.synthetic import SyntheticSpec, make_run_dir


def test_the_calibration_plan_launches_three_times_and_benches_only() -> None:
    plan = parse_plan(calibration_plan_yaml("smoke", "full", None), "calibration plan")
    assert plan.launches == 3 and plan.evals == [] and plan.name == "smoke-calibration"
    assert parse_plan(calibration_plan_yaml("smoke", "full", 5), "plan").launches == 5
    flagship = parse_plan(calibration_plan_yaml("kimi-k3-gb300", "standard", None), "plan")
    assert all(w.launches is None for w in flagship.workloads)  # a spread needs every point on every launch
    assert {flagship.launches_of(name) for name in flagship.servers if name.endswith("dcp8")} == {3}


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> Calibration:
    rd = make_run_dir(tmp_path_factory.mktemp("aa") / "run", SyntheticSpec(launches=3, launch_sd=0.05))
    plan = plan_of(rd)
    spreads = calibration_spreads(rd, plan)
    return Calibration(
        created_at="2026-12-01T10:00:00Z", plan_name=plan.name, launches=3, fingerprint=fingerprint(rd, plan),
        spreads=spreads,
    )  # fmt: skip


def test_spreads_are_per_server_point_and_metric(calibration: Calibration) -> None:
    # 2 servers x 3 points x 4 headline metrics, each over 3 launches
    assert len(calibration.spreads) == 24 and {s.df for s in calibration.spreads} == {2}
    tpot = [s.var for s in calibration.spreads if s.metric == "tpot_s.p50"]
    assert all(0 < v < 0.1**2 for v in tpot)  # launch SD 5% of TPOT: variances of a few 1e-3


def test_a_one_launch_run_takes_its_own_fingerprints_calibration(calibration: Calibration, tmp_path: Path) -> None:
    rd = make_run_dir(tmp_path / "run")
    reporter = RecordingReporter()
    adopt_calibration(calibration, rd, plan_of(rd), reporter)
    assert read_json(rd.root / CALIBRATION_NAME)["fingerprint"] == calibration.fingerprint.model_dump()
    assert reporter.lines == ["one-launch CIs: launch-to-launch variance from the calibration of 2026-12-01 "
                              f"(R = 3, hardware {calibration.fingerprint.hardware[:12]}, software "
                              f"{calibration.fingerprint.software[:12]})"]  # fmt: skip
    comparisons = derive_summary(rd).bench.comparisons
    assert comparisons and all(
        c.ci_df == 4 and c.label is None and "calibration" in (c.ci_note or "") for c in comparisons
    )


def test_another_fingerprints_calibration_is_refused(calibration: Calibration, tmp_path: Path) -> None:
    rd = make_run_dir(tmp_path / "run")
    env = read_json(rd.env_json)
    atomic_write_json(rd.env_json, {**env, "memory_total_bytes": 1})  # another machine
    with pytest.raises(CalibrationError, match="measured on another hardware"):
        adopt_calibration(calibration, rd, plan_of(rd), RecordingReporter())
    assert not (rd.root / CALIBRATION_NAME).exists()
