"""report.md's time-to-verdict section: the measuring share from the run's phase record."""

from __future__ import annotations

from typing import Any

from byog.report.markdown import REPORT_VERSION
from byog.report.sections import time_spent
from byog.schemas.summary import PhaseTime


def _ctx(phases: PhaseTime | None, report_format: int = REPORT_VERSION, points: int = 1) -> Any:
    class Ctx:
        class summary:
            time_to_verdict = None

            class bench:
                wake_effects: list[object] = []

    Ctx.summary.phases = phases  # type: ignore[attr-defined]
    Ctx.report_format = report_format  # type: ignore[attr-defined]
    Ctx.summary.bench.points = [object()] * points  # type: ignore[attr-defined]
    return Ctx()


def test_the_section_says_where_the_time_went_from_the_phase_record() -> None:
    spent = PhaseTime(
        wall_s=195.6,
        start_s=78.2,
        warmup_s=5.0,
        measuring_s=54.4,
        swap_s=0.0,
        eval_s=39.3,
        other_s=18.7,
        measuring_share=54.4 / 195.6,
    )
    lines = time_spent.section(_ctx(spent))
    assert lines[0] == "## Time to verdict"
    assert (
        "Where the time went (phases.json): measuring 27.8% of 195.6 s; start 40.0%, eval 20.1%, other 9.6%, "
        "warm-up 2.6%." in lines
    )
    assert time_spent.section(_ctx(spent, report_format=8)) == lines  # a run with bench: every format alike


def test_a_run_without_bench_says_so_and_an_older_format_keeps_its_bytes() -> None:
    """An evals-only run measured no bench: "measuring 0.0%" read as a run that wasted its time. From
    report format 9 the line leads with "no bench"; a format 8 report re-renders as it was written."""
    spent = PhaseTime(
        wall_s=214.0, start_s=139.1, warmup_s=0.0, measuring_s=0.002, swap_s=0.0, eval_s=73.0, other_s=1.9
    )
    now = time_spent.section(_ctx(spent, report_format=time_spent.NO_BENCH_FORMAT, points=0))
    assert "Where the time went (phases.json): no bench; of 214.0 s: start 65.0%, eval 34.1%, other 0.9%." in now
    then = time_spent.section(_ctx(spent, report_format=time_spent.NO_BENCH_FORMAT - 1, points=0))
    assert then == [
        "## Time to verdict",
        "",
        "Where the time went (phases.json): measuring 0.0% of 214.0 s; start 65.0%, eval 34.1%, other 0.9%.",
        "",
    ]


def test_a_run_without_a_phase_record_keeps_its_section_as_it_was() -> None:
    assert time_spent.section(_ctx(None)) == []
