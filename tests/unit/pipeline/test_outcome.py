"""`byog run`'s closing table: with two candidates every row names its pair."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from byog.analysis.summary import derive_summary
from byog.cli.console_reporter import ConsoleReporter
from byog.pipeline.run import print_outcome
from tests.support.bundles_kit import TINY
from tests.support.synthetic import make_run_dir


def test_every_row_of_the_closing_table_names_its_pair(tmp_path: Path) -> None:
    summary = derive_summary(make_run_dir(tmp_path / "run", TINY))
    second = [c.model_copy(update={"candidate": "cand-fp8"}) for c in summary.bench.comparisons]
    summary.bench.comparisons += second
    summary.bench.points += [
        p.model_copy(update={"server": "cand-fp8"}) for p in summary.bench.points if p.server == "candidate"
    ]
    out = io.StringIO()
    print_outcome(summary, ConsoleReporter(Console(file=out, force_terminal=False, width=200)))
    table = out.getvalue().split("decode tok/s, candidate / baseline")[1].split("\n\n")[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    point = summary.bench.comparisons[0].point_id
    assert [r.split(" | ")[:2] for r in rows] == [["| candidate vs baseline", point], ["| cand-fp8 vs baseline", point]]


def test_one_launch_per_side_is_said_under_the_closing_table(tmp_path: Path) -> None:
    from byog.analysis.perf_equivalence import ONE_LAUNCH_NOTE
    from tests.support.reporter import RecordingReporter

    summary = derive_summary(make_run_dir(tmp_path / "run", TINY))
    reporter = RecordingReporter()
    print_outcome(summary, reporter)
    (table,) = [t for t in reporter.tables if t.title.startswith("decode tok/s")]
    assert {row[-1] for row in table.rows} == {"screening"}  # no label stronger than screening
    assert f"95% CI, candidate vs baseline: {ONE_LAUNCH_NOTE}; performance labels: screening" in reporter.lines
