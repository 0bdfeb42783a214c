"""The reporter protocol: the silent default says nothing, the recording one keeps what a lower
layer said, and the layers below the CLI report through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.bench.ceiling import FakeConfig, FakeServerThread
from byog.bench.sweep import run_bench_for_server
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter, Reporter, Table
from byog.pipeline.derive import derive_and_write
from byog.pipeline.run import print_outcome
from byog.plans.load import parse_plan
from tests.support.bundles_kit import TINY
from tests.support.reporter import RecordingReporter
from tests.support.sweep import FakeRunning
from tests.support.synthetic import make_run_dir

PLAN = """
name: t
model: {path: /m}
servers:
  base: {runtime: endpoint, url: "http://unused"}
baseline: base
remeasure: 0  # one bar: a loaded box may saturate the client, which would start a second attempt's
workloads:
  - {kind: batch, name: decode, batch_sizes: [2], isl: [5], osl: [8], warmup_waves: 1, waves: 2}
"""


def _say_everything(reporter: Reporter) -> None:
    reporter.line("a line", style="warn", lead="base")
    reporter.table(Table("t", ["a", "b"]).with_row("1", "2"))
    with reporter.status("starting", lead="base") as status:
        status.update("still starting")
    with reporter.progress() as board:
        task = board.task("point", total=3)
        task.advance()
        task.update(description="point: invalid", total=4, style="warn")


def test_the_null_reporter_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    reporter = NullReporter()
    _say_everything(reporter)
    assert reporter.live is False
    assert capsys.readouterr() == ("", "")


def test_the_recording_reporter_keeps_what_was_said(capsys: pytest.CaptureFixture[str]) -> None:
    reporter = RecordingReporter()
    _say_everything(reporter)
    assert reporter.styled == [("basea line", "warn")]
    assert [t.rows for t in reporter.tables] == [(("1", "2"),)]
    assert reporter.statuses == ["basestarting", "still starting"]
    [task] = reporter.tasks
    assert (task.description, task.total, task.done, task.style) == ("point: invalid", 4, 1, "warn")
    assert capsys.readouterr() == ("", "")


def test_a_table_is_plain_data_that_grows_by_copies() -> None:
    empty = Table("t", ["a"], right={"a"})
    full = empty.with_row("1").with_row(2)  # type: ignore[arg-type]
    assert empty.rows == () and full.rows == (("1",), ("2",))


def test_derive_says_where_it_wrote_the_summary_and_the_report(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    reporter = RecordingReporter()
    derive_and_write(run_dir.root, reporter)
    assert reporter.lines == [f"summary: {run_dir.summary_json}", f"report:  {run_dir.report_md}"]


def test_the_closing_table_reaches_the_reporter_as_plain_strings(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    reporter = RecordingReporter()
    print_outcome(derive_and_write(run_dir.root), reporter)
    decode = reporter.tables[0]
    assert decode.title == "decode tok/s, candidate / baseline" and decode.columns[0] == "pair"
    assert decode.rows and all(row[0] == "candidate vs baseline" for row in decode.rows)
    assert all(isinstance(cell, str) for row in decode.rows for cell in row)


def test_the_sweep_shows_a_bar_a_point_that_ends_full(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    reporter = RecordingReporter()
    with FakeServerThread(FakeConfig(tokens_per_chunk=1, step_s=0.002)) as fake:
        result = run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), RunDir(tmp_path), reporter)
    [task] = reporter.tasks
    if result["invalid"]:  # a loaded box can saturate the client: the bar says so
        assert (task.description, task.style) == ("base decode-b2-isl5-osl8: invalid", "warn")
    else:
        assert task.description.startswith("base decode-b2-isl5-osl8 (") and task.style is None
    assert task.total is not None and task.done == task.total
