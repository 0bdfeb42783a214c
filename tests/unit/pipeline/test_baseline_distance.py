"""The baseline's distance from the candidate's merge base, recorded after a run where the checkout is, and
said on the first screen when the baseline is not the merge base."""

from __future__ import annotations

import json
from pathlib import Path

from byog.core.safe_text import md_text
from byog.pipeline.baseline_distance import record_baseline_distances
from byog.plans.load import load_plan
from byog.report.context import ReportContext
from byog.report.isolation import merge_base_lines
from byog.schemas.server import ServerRecord
from tests.support.git_repos import upstream_and_pr
from tests.support.report_runs import derive
from tests.support.synthetic import SyntheticSpec, make_run_dir

SPEC = SyntheticSpec(batch_sizes=(1,), eval_items=4)


def _set_identity(path: Path, vllm: dict[str, object]) -> None:
    record = json.loads(path.read_text())
    record["identity"] = {"vllm": vllm}
    path.write_text(json.dumps(record))


def test_a_release_baseline_is_counted_behind_the_merge_base_and_said_first(tmp_path: Path) -> None:
    checkout, base, release = upstream_and_pr(tmp_path)
    run_dir = make_run_dir(tmp_path / "run", SPEC)
    plan, _ = load_plan(str(run_dir.plan_yaml))
    _set_identity(
        run_dir.server_record("candidate"), {"version": "0.32.1.dev5", "install": {"source_dir": str(checkout)}}
    )
    _set_identity(run_dir.server_record("baseline"), {"version": "0.32.0+cpu"})
    said = record_baseline_distances(plan, run_dir)
    line = f"baseline vllm 0.32.0+cpu is 3 commits behind the merge base {base[:7]}: the difference includes them"
    assert said == [f"candidate vs baseline: {line}"]
    record = ServerRecord.model_validate_json(run_dir.server_record("candidate").read_text())
    [entry] = record.baseline_distance
    assert (entry.baseline, entry.merge_base, entry.baseline_commit, entry.behind) == ("baseline", base, release, 3)
    assert record_baseline_distances(plan, run_dir) == said  # again: replaced, not appended
    assert len(ServerRecord.model_validate_json(run_dir.server_record("candidate").read_text()).baseline_distance) == 1
    lines = merge_base_lines(ReportContext(run_dir, derive(run_dir)))
    assert lines == [f"- ⚠ candidate vs baseline: {md_text(line)}."]


def test_the_merge_base_itself_is_not_a_warning_and_no_checkout_records_nothing(tmp_path: Path) -> None:
    checkout, base, _ = upstream_and_pr(tmp_path)
    run_dir = make_run_dir(tmp_path / "run", SPEC)
    plan, _ = load_plan(str(run_dir.plan_yaml))
    _set_identity(run_dir.server_record("baseline"), {"version": "0.32.1.dev3", "commit": base})
    assert record_baseline_distances(plan, run_dir) == []  # the candidate names no checkout
    _set_identity(run_dir.server_record("candidate"), {"install": {"source_dir": str(checkout)}})
    assert record_baseline_distances(plan, run_dir) == [f"candidate vs baseline: baseline = merge base {base[:7]}"]
    assert merge_base_lines(ReportContext(run_dir, derive(run_dir))) == []
