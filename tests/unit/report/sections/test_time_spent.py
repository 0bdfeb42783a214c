"""report.md's time-to-verdict section: the measuring share from the run's phase record."""

from __future__ import annotations

from typing import Any

from byog.report.sections import time_spent
from byog.schemas.summary import PhaseTime


def _ctx(phases: PhaseTime | None) -> Any:
    class Ctx:
        class summary:
            time_to_verdict = None

            class bench:
                wake_effects: list[object] = []

    Ctx.summary.phases = phases  # type: ignore[attr-defined]
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


def test_a_run_without_a_phase_record_keeps_its_section_as_it_was() -> None:
    assert time_spent.section(_ctx(None)) == []
