"""verify's stopping check on a signed bundle: a point that stopped on its CI verifies; one whose
recorded decision was edited (by a contributor's own tools, then signed) fails in one sentence
naming the point and what its waves say."""

from __future__ import annotations

import json
from pathlib import Path

from byog.analysis.wave_stopping import LiveStopping, Rule
from byog.bundles.verify import verify_bundle
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.schemas.bench import write_request_rows
from tests.support.synthetic import SyntheticSpec, make_run_dir
from tests.support.waves import MS, replay, stopped_record
from tests.unit.bundles.checks.test_identity import check, pack

POINT = "decode-b1-isl32-osl64"
NOISY_MS = [1.0, 1.3, 0.8, 1.25, 0.9, 1.2, 0.95]


def stopped_run(root: Path, edit: dict[str, object] | None = None) -> RunDir:
    """A synthetic run whose candidate point ran under the plan's stopping rule (1%, 3-6 waves: 6 planned, 3
    at least) on noisy recorded waves; ``edit``: fields of its stopping record changed afterwards."""
    rd = make_run_dir(root, SyntheticSpec(batch_sizes=(1,), eval_items=5, waves=6))
    plan = parse_plan(rd.plan_yaml.read_text(encoding="utf-8"), "plan.yaml")
    point = next(p for p in expand_plan(plan) if p.point_id == POINT)
    rule = Rule.of(point)
    assert rule is not None
    live = LiveStopping(point, "candidate", rule)
    rows = replay(point, [int(s * MS) for s in NOISY_MS], live.after_wave, jitter_ns=311)
    write_request_rows(rd.bench_rows("candidate", POINT), rows)
    record = stopped_record("candidate", point, rows, live.record()).model_dump(mode="json")
    record["stopping"].update(edit or {})
    atomic_write_json(rd.bench_point("candidate", POINT), record)
    return rd


def test_a_point_that_stopped_where_its_waves_say_verifies(tmp_path: Path) -> None:
    rd = stopped_run(tmp_path / "run")
    assert json.loads(rd.bench_point("candidate", POINT).read_text())["stopping"]["reason"] == "cap"
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert report.verified, report.failures
    assert check(report, "stopping").message == "1 point(s) stopped where their recorded waves and the plan's rule say"


def test_an_edited_stopping_decision_fails_verify_in_one_sentence(tmp_path: Path) -> None:
    rd = stopped_run(tmp_path / "run", edit={"reason": "target"})
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    [failure] = [f for f in report.failures if f.startswith("stopping:")]
    assert failure.startswith(
        f"stopping: bench/candidate/{POINT}.json: its 6 recorded waves stop the rule (1.00% target, 3-6 waves) "
        "after wave 6 (cap, half-width "
    )
    assert failure.endswith("but the record says 6 (target)")
