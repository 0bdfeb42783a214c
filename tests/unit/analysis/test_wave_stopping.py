"""The stopping rule of a batch point on recorded wave timings: a tight CI stops at the minimum, a
noisy one at the cap; the decision recomputed from the stored rows is the live one, and an edited
record (rule, decision or half-width) is named in one clause."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.analysis.bench_summary import wave_units
from byog.analysis.request_columns import read_request_columns
from byog.analysis.wave_stopping import LiveStopping, Rule, decide, half_widths, recorded_problem, seed_of
from byog.schemas.bench import BenchPoint, PointRecord, RandomPrompts, RequestRow, write_request_rows
from tests.support.waves import replay, stopped_record

B, OSL, WARMUP = 2, 16, 1


def point(ci_target: float | None = 0.01, waves: int = 3, max_waves: int = 6) -> BenchPoint:
    return BenchPoint(
        point_id="decode-b2-isl8-osl16",
        workload="decode",
        kind="batch",
        batch_size=B,
        isl=8,
        osl=OSL,
        prompts=RandomPrompts(),
        warmup_waves=WARMUP,
        waves=waves,
        ci_target=ci_target,
        max_waves=max_waves if ci_target is not None else 0,
        prompt_seed=7,
    )


def run_live(p: BenchPoint, steps_ns: list[int], jitter_ns: int = 0) -> tuple[list[RequestRow], LiveStopping]:
    """What the sweep's batch loop does: warm-up waves, then measured waves until the rule stops."""
    rule = Rule.of(p)
    assert rule is not None
    live = LiveStopping(p, "base", rule)
    return replay(p, steps_ns, live.after_wave, jitter_ns), live


TIGHT = [1_000_000] * 12  # every wave decodes at the same rate
NOISY = [1_000_000, 1_300_000, 800_000, 1_250_000, 900_000, 1_200_000, 950_000] * 2


def test_a_tight_point_stops_at_its_minimum_and_a_noisy_one_at_its_cap() -> None:
    tight_rows, tight = run_live(point(), TIGHT)
    assert tight.record().reason == "target" and tight.record().waves == 3  # the minimum
    assert len(tight_rows) == B * (WARMUP + 3)
    assert tight.record().half_widths[0] is None  # one wave says nothing about noise
    noisy_rows, noisy = run_live(point(), NOISY)
    record = noisy.record()
    assert record.reason == "cap" and record.waves == 6 and len(noisy_rows) == B * (WARMUP + 6)
    assert all(h is not None and h > 0.01 for h in record.half_widths[1:])
    # a wider target lets the same noisy waves stop at the minimum
    _, loose = run_live(point(ci_target=0.5), NOISY)
    assert loose.record().reason == "target" and loose.record().waves == 3


def test_the_rule_never_stops_before_the_minimum_and_always_at_the_cap() -> None:
    rule = Rule(target=0.01, min_waves=3, max_waves=5)
    assert decide(rule, [None, 0.0]) is None  # tight after 2 waves, but the minimum is 3
    assert decide(rule, [None, 0.0, 0.0]) == (3, "target")
    assert decide(rule, [None, 0.2, 0.2, 0.2, 0.2]) == (5, "cap")
    assert decide(rule, [None, 0.2, 0.2, 0.005]) == (4, "target")
    assert Rule.of(point(ci_target=None)) is None  # a fixed number of waves


def _stored(tmp_path: Path, p: BenchPoint, steps: list[int]) -> tuple[PointRecord, Path]:
    rows, live = run_live(p, steps, jitter_ns=437)
    path = tmp_path / "rows.parquet"
    write_request_rows(path, rows)
    record = stopped_record("base", p, rows, live.record())
    return record, path


@pytest.mark.parametrize("steps", [TIGHT, NOISY], ids=["tight", "noisy"])
def test_verify_recomputes_the_live_decision_from_the_stored_rows(tmp_path: Path, steps: list[int]) -> None:
    record, path = _stored(tmp_path, point(), steps)
    columns = read_request_columns(path)
    # chunk times off the microsecond grid: the live half-widths were taken on the stored grid
    widths = half_widths(wave_units(record.point, columns), seed_of(record.point, "base"))
    assert record.stopping is not None and widths == record.stopping.half_widths
    assert recorded_problem(record, columns, planned=point()) is None


def test_verify_refuses_an_edited_decision_rule_or_half_width(tmp_path: Path) -> None:
    record, path = _stored(tmp_path, point(), NOISY)
    columns = read_request_columns(path)
    assert record.stopping is not None
    said_target = record.model_copy(update={"stopping": record.stopping.model_copy(update={"reason": "target"})})
    problem = recorded_problem(said_target, columns)
    assert (
        problem is not None
        and "its 6 recorded waves stop the rule (1.00% target, 3-6 waves) after wave 6 (cap" in problem
    )
    assert problem.endswith("but the record says 6 (target)")
    widths = list(record.stopping.half_widths)
    widths[2] = 0.004
    edited = record.model_copy(update={"stopping": record.stopping.model_copy(update={"half_widths": widths})})
    problem = recorded_problem(edited, columns)
    assert problem is not None and problem.startswith("its record gives the half-width after wave 3 as 0.40%")
    looser = record.model_copy(update={"stopping": record.stopping.model_copy(update={"target": 0.5})})
    problem = recorded_problem(looser, columns)
    assert problem is not None and "states the rule (50.00% target, 3-6 waves)" in problem
    problem = recorded_problem(record, columns, planned=point(ci_target=0.02))
    assert problem == "its stopping rule (1.00% target, 3-6 waves) is not the plan's (2.00% target, 3-6 waves)"
    assert recorded_problem(record.model_copy(update={"stopping": None}), columns) == (
        "it ran with a CI target but has no stopping record"
    )


def test_a_record_whose_waves_end_before_the_rule_stops_is_refused(tmp_path: Path) -> None:
    record, path = _stored(tmp_path, point(), NOISY)
    assert record.stopping is not None
    # the same waves under a rule with a higher cap: six noisy waves are not enough to stop
    longer = point(max_waves=9)
    stopping = record.stopping.model_copy(update={"max_waves": 9})
    problem = recorded_problem(
        record.model_copy(update={"point": longer, "stopping": stopping}), read_request_columns(path)
    )
    assert problem is not None and problem.startswith("its 6 recorded waves end before the rule (1.00% target, 3-9")
