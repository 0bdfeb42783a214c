"""The accuracy section's per-stratum line: from report format 9 it says the batch each server's counters
measured over the stratum ("unknown" where one recorded none); format 8 writes the line it always wrote."""

from __future__ import annotations

from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.core.paths import RunDir
from byog.report.markdown import render_report
from tests.support.strata import stratified_run
from tests.support.synthetic import record_server_batch

PREFIX = "- gsm8k, candidate vs baseline: per operating point (requests in flight, which bound the server's batch"


def _line(rd: RunDir, report_format: int | None = None) -> str:
    summary = derive_summary(rd)
    report = (
        render_report(rd, summary) if report_format is None else render_report(rd, summary, report_format=report_format)
    )
    (line,) = [x for x in report.splitlines() if x.startswith(PREFIX)]
    return line


def test_each_stratum_says_both_servers_measured_batch(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path)
    record_server_batch(rd, "candidate", "gsm8k", {1: (1123.0, 1123.0), 64: (910.0, 28.0)})
    record_server_batch(rd, "baseline", "gsm8k", {1: (1114.0, 1114.0), 64: (960.0, 37.0)})
    line = _line(rd)
    assert line.startswith(
        f"{PREFIX}; server batch: candidate / baseline output tokens per engine step, from their counters): "
        "1: equivalent, d 0.00, 90% CI ["
    )
    assert ", server batch 1.0 / 1.0; 64: different, d -" in line
    assert ", server batch 32.5 / 25.9; 64 vs 1: Δd " in line


def test_a_server_without_counters_is_unknown(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path)  # results.json without the counts: an older run, or no /metrics
    line = _line(rd)
    assert line.count("server batch unknown") == 2
    record_server_batch(rd, "candidate", "gsm8k", {1: (40.0, 40.0), 64: (640.0, 20.0)})
    record_server_batch(rd, "baseline", "gsm8k", {1: (40.0, 40.0), 64: None})  # no /metrics over stratum 64
    line = _line(rd)
    assert "items, server batch 1.0 / 1.0; 64: " in line and "items, server batch 32.0 / unknown; 64 vs 1" in line


def test_report_format_8_writes_the_line_without_the_batch(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path)
    record_server_batch(rd, "candidate", "gsm8k", {1: (1123.0, 1123.0), 64: (910.0, 28.0)})
    line = _line(rd, report_format=8)
    assert line.startswith(f"{PREFIX}): 1: equivalent, d 0.00, 90% CI [")
    assert "server batch" not in line and "tokens per engine step" not in line
    assert "items; 64: different" in line and "items; 64 vs 1: Δd" in line
