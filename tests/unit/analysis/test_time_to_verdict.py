"""Time-to-verdict records are checked before anything is computed from them: an impossible one
fails in one sentence instead of rendering "-692003211.4% measuring share"."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.analysis.time_to_verdict import record_problems, server_records
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from tests.support.hostile_47 import HOSTILE_TIMES, PLAN, record, span, swaps


def test_a_possible_record_has_nothing_to_say() -> None:
    sane = record(
        activity=[span(40, 50), span(50, 51, "swap")], sleep_mode=swaps({"seq": 1}, {"seq": -1, "point_id": None})
    )
    assert record_problems([("cand", 1, sane)], PLAN) == []


@pytest.mark.parametrize("case", list(HOSTILE_TIMES))
def test_an_impossible_record_fails_in_one_sentence(case: str) -> None:
    rec, sentence = HOSTILE_TIMES[case]
    problems = record_problems([("cand", 1, rec)], PLAN)
    assert problems and sentence in problems[0] and "\n" not in problems[0], problems


def test_a_relaunch_an_earlier_byog_recorded_for_a_server_with_evals_only_is_still_read(tmp_path: Path) -> None:
    """Such a server now starts once, but a bundle made before recorded its second start: verify recomputes
    the time to verdict from the same records as that byog did."""
    plan = parse_plan(
        "name: t\nmodel: {path: /m}\nservers: {cand: {}, base: {}, evals: {}}\nbaseline: base\n"
        "workloads: [{kind: batch, servers: [cand, base], batch_sizes: [1], isl: [5], osl: [12]}]\n"
        "evals: [{task: gsm8k, limit: 10, servers: [evals]}]\nlaunches: 2\n",
        "plan.yaml",
    )
    assert plan.launches_of("evals") == 1
    run_dir = RunDir(tmp_path / "run")
    for launch in (1, 2):
        path = run_dir.for_launch(launch).server_record("evals")
        path.parent.mkdir(parents=True)
        path.write_text(record(name="evals", activity=[span(40, 50)]).model_dump_json())
    assert [(name, launch) for name, launch, _ in server_records(run_dir, plan)] == [("evals", 1), ("evals", 2)]
