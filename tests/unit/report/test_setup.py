"""The headline's setup lines: an interleaved pair's method and a wake that changed the server."""

from __future__ import annotations

from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.report.markdown import render_report
from byog.schemas.bench import WakeIntegrity
from tests.support.synthetic import SyntheticSpec, make_run_dir


def test_the_report_names_the_method_and_a_wake_that_changed_outputs(tmp_path: Path) -> None:
    rd = make_run_dir(tmp_path / "run", SyntheticSpec(batch_sizes=(1,), eval_items=5))
    summary = derive_summary(rd)
    why = "wake integrity: outputs changed after wake 3 (B=1: 32 of 32 prompts differ from before the first sleep)"
    summary.bench.wake_integrity = [
        WakeIntegrity(
            candidate="candidate",
            baseline="baseline",
            method="interleaved, then sequential",
            why=f"{why}: the points measured since the last good fingerprint were re-measured sequentially (p)",
            wakes_checked=3,
            wakes_matched=2,
            max_abs_dlogprob=0.0,
            changed=[why],
            fallback_points=["p"],
        )
    ]
    report = render_report(rd, summary)
    assert (
        "- Method, candidate vs baseline: **interleaved, then sequential**: wake integrity: outputs changed" in report
    )
    assert "(2 of 3 wake checks matched, max |Δlogprob| 0 at B=1; figures: summary.json" in report
    assert f"- ⚠ {why}: candidate vs baseline's waves since the last good fingerprint are invalid" in report
    summary.bench.wake_integrity = []
    assert "Method," not in render_report(rd, summary)
