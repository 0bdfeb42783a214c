"""The headline's setup lines: an interleaved pair's method and a wake that changed the server."""

from __future__ import annotations

from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.report.markdown import render_report
from byog.schemas.bench import WakeEffect, WakeIntegrity
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
    assert "are valid" not in report
    assert "**sequential**" not in report  # the interleaved pair's method only
    summary.bench.wake_integrity = []
    sequential = "- Method, candidate vs baseline: **sequential**: each server measured in a block of its own"
    assert sequential in render_report(rd, summary)
    assert "Method," not in render_report(rd, summary, report_format=7)  # format 7 named interleaved pairs only


def test_the_method_line_gives_each_sides_wake_effect_and_a_flagged_one_is_a_warning(tmp_path: Path) -> None:
    rd = make_run_dir(tmp_path / "run", SyntheticSpec(batch_sizes=(1,), eval_items=5))
    summary = derive_summary(rd)
    summary.bench.wake_integrity = [
        WakeIntegrity(
            candidate="candidate",
            baseline="baseline",
            method="interleaved",
            why="every wake matched",
            wakes_checked=2,
            wakes_matched=2,
        )
    ]
    summary.bench.wake_effects = [
        WakeEffect(server=name, point_id="p", woken_waves=4, continued_waves=4, ratio=r, ci_low=lo, ci_high=hi)
        for name, r, lo, hi in (("candidate", 0.92, 0.853, 0.984), ("baseline", 1.01, 0.97, 1.05))
    ]
    for effect in summary.bench.wake_effects:
        effect.flagged = not effect.ci_low <= 1.0 <= effect.ci_high  # type: ignore[operator]
    report = render_report(rd, summary)
    headline = report.split("## Headline", 1)[1].split("**What changed**", 1)[0]
    assert (
        "Wake effect (first wave after a wake / continued waves, decode tok/s, per point): candidate 0.92; " in headline
    )
    assert "baseline 1.01; ⚠ flagged: candidate at p 0.920 (95% CI 0.853–0.984)" in headline
    warnings = headline.split("**Warnings**", 1)[1]
    assert "- ⚠ Wake-up flagged: candidate at p ran at 0.92× its continued speed" in warnings
    assert "are valid" not in report
    summary.bench.wake_effects[0].flagged = False
    assert "none flagged" in render_report(rd, summary)
    # a format-5 report re-renders as it was written: no wake-effect clause there
    assert "Wake effect (" not in render_report(rd, summary, report_format=5)
