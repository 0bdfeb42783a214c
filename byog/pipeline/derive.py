"""summary.json and report.md from a run directory's raw records alone (what verify recomputes)."""

from __future__ import annotations

from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.bundles.attestations import ATTESTATIONS_NAME, attestations_bytes
from byog.core.io import atomic_write_bytes, atomic_write_json, atomic_write_text
from byog.core.paths import RunDir, require_run_dir
from byog.core.reporter import NullReporter, Reporter
from byog.report.markdown import render_report
from byog.schemas.summary import Summary


def derive_and_write(run_dir: Path, reporter: Reporter = NullReporter()) -> Summary:
    require_run_dir(run_dir)
    rd = RunDir(run_dir)
    summary = derive_summary(rd)
    atomic_write_json(rd.summary_json, summary.to_json())
    atomic_write_text(rd.report_md, render_report(rd, summary))
    atomic_write_bytes(rd.root / ATTESTATIONS_NAME, attestations_bytes(rd, summary))
    reporter.line(f"summary: {rd.summary_json}")
    reporter.line(f"report:  {rd.report_md}")
    return summary
