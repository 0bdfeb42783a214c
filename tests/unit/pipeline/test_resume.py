"""`byog run PLAN` resumes the plan's newest unfinished run, and an edited plan keeps what it did not change."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.paths import RunDir
from byog.pipeline import run as run_module
from byog.pipeline.resume import SUPERSEDED, keep_unchanged, newest_unfinished, resume_command
from byog.pipeline.run import run_plan
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from tests.support.reporter import RecordingReporter

PLAN = """\
name: resumable
model: {path: builtin:smollm2-135m-instruct, max_model_len: 4096}
servers:
  candidate: {runtime: endpoint, url: 'http://127.0.0.1:9'}
  baseline: {runtime: endpoint, url: 'http://127.0.0.1:9'}
baseline: baseline
workloads:
  - {kind: batch, name: decode, batch_sizes: [1, 2], isl: [32], osl: [16]}
evals:
  - {task: gsm8k, limit: 10}
"""


def _measured(rd: RunDir, text: str) -> None:
    """A run that stopped after every bench point and the baseline's eval."""
    plan = parse_plan(text, "t")
    rd.root.mkdir(parents=True, exist_ok=True)
    rd.plan_yaml.write_text(text)
    for point in expand_plan(plan):
        for server in point.servers:
            rd.bench_dir(server).mkdir(parents=True, exist_ok=True)
            rd.bench_point(server, point.point_id).write_text("{}")
            rd.bench_rows(server, point.point_id).write_bytes(b"rows")
    rd.eval_dir("baseline", "gsm8k").mkdir(parents=True)
    rd.eval_items("baseline", "gsm8k").write_bytes(b"items")
    rd.eval_results("baseline", "gsm8k").write_text("{}")


def test_an_edited_eval_list_keeps_every_bench_point_and_reruns_the_eval(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "run")
    _measured(rd, PLAN)
    edited = PLAN.replace("limit: 10", "limit: 20")
    said = keep_unchanged(rd, parse_plan(PLAN, "old"), parse_plan(edited, "new"), edited)
    points = expand_plan(parse_plan(edited, "new"))
    assert all(rd.bench_point_complete(s, p.point_id) for p in points for s in p.servers)
    assert not rd.eval_dir("baseline", "gsm8k").exists()
    assert (rd.root / SUPERSEDED).is_dir() and any((rd.root / SUPERSEDED).glob("*/evals/baseline/gsm8k/items.parquet"))
    assert rd.plan_yaml.read_text() == edited
    assert said[0].startswith("the plan changed since this run stopped: 4 record(s) kept")
    assert said[1] == "re-runs: eval gsm8k on baseline"


def test_a_changed_point_reruns_that_point_only(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "run")
    _measured(rd, PLAN)
    edited = PLAN.replace("batch_sizes: [1, 2]", "batch_sizes: [1, 2], waves: 7")
    said = keep_unchanged(rd, parse_plan(PLAN, "old"), parse_plan(edited, "new"), edited)
    assert not any(
        rd.bench_point_complete(s, p.point_id) for p in expand_plan(parse_plan(edited, "n")) for s in p.servers
    )
    assert rd.eval_complete("baseline", "gsm8k")
    assert "re-runs: bench baseline/" in said[1]


def test_a_workload_cut_to_one_launch_drops_its_later_launches_records(tmp_path: Path) -> None:
    """Its points no longer run on launch 2: those records go (superseded); launch 1's stay, and so do the
    launch-2 records of the workload that still runs there."""
    rd = RunDir(tmp_path / "run")
    other = "  - {kind: batch, name: other, batch_sizes: [4], isl: [32], osl: [16]}\n"
    twice = PLAN.replace("evals:\n", other + "evals:\n") + "launches: 2\n"
    _measured(rd, twice)
    second = rd.for_launch(2)
    for point in expand_plan(parse_plan(twice, "t")):
        for server in point.servers:
            second.bench_dir(server).mkdir(parents=True, exist_ok=True)
            second.bench_point(server, point.point_id).write_text("{}")
            second.bench_rows(server, point.point_id).write_bytes(b"rows")
    once = twice.replace("name: decode,", "name: decode, launches: 1,")
    keep_unchanged(rd, parse_plan(twice, "old"), parse_plan(once, "new"), once)
    points = expand_plan(parse_plan(once, "new"))
    assert all(rd.bench_point_complete(s, p.point_id) for p in points for s in p.servers)
    second = {p.workload: [rd.for_launch(2).bench_point_complete(s, p.point_id) for s in p.servers] for p in points}
    assert second == {"decode": [False, False], "other": [True, True]}


def test_the_newest_unfinished_run_of_the_same_plan_is_found(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name, plan_name, finished in [("a", "resumable", False), ("b", "other", False), ("c", "resumable", True)]:
        (runs / name).mkdir(parents=True)
        (runs / name / "plan.yaml").write_text(f"name: {plan_name}\n")
        if finished:
            (runs / name / "summary.json").write_text("{}")
    assert newest_unfinished("resumable", runs) == runs / "a"
    assert newest_unfinished("nothing", runs) is None


def test_a_stopped_run_names_the_command_and_resumes_without_run_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BYOG_RUNS_DIR", str(tmp_path / "runs"))
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    measured: list[Path] = []

    def interrupted(_plan: object, rd: RunDir, *args: object) -> None:
        measured.append(rd.root)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "_measure", interrupted)
    with pytest.raises(KeyboardInterrupt) as first:
        run_plan(str(plan), None)
    assert first.value.resume == f"byog run {plan}"  # type: ignore[attr-defined]
    reporter = RecordingReporter()
    with pytest.raises(KeyboardInterrupt):
        run_plan(str(plan), None, reporter)
    assert measured[0] == measured[1]
    assert reporter.lines[0] == (
        f"resuming {measured[0]}, the newest unfinished run of plan 'resumable' (--new starts over)"
    )
    with pytest.raises(KeyboardInterrupt):
        run_plan(str(plan), None, new=True)
    assert measured[2] != measured[0]
    elsewhere = resume_command(str(plan), "smoke", measured[0], "another-plan")
    assert elsewhere == f"byog run {plan} --tier smoke --run-dir {measured[0]}"
