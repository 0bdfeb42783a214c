"""Which invalidity is transient (measured again) and what every surface says of a re-measured point."""

from __future__ import annotations

from byog.analysis import energy
from byog.analysis.validity import remeasured_note, transient
from byog.schemas.bench import PointSummary

SATURATED = "client saturated: event-loop lag P99 9.1 ms is over 25% of the median ITL (limit 2.0 ms)"
THROTTLED = energy.throttle_reason({"HwSlowdown": 0.4}) or ""


def test_a_busy_client_and_slowed_clocks_are_transient_and_nothing_else_is() -> None:
    assert THROTTLED.startswith("GPU clocks slowed by heat or hardware")
    assert transient([SATURATED]) and transient([THROTTLED]) and transient([SATURATED, THROTTLED])
    assert not transient([])  # a valid point is not measured again
    assert not transient(["the server preempted 3 requests (KV cache too small for the load)"])
    assert not transient([SATURATED, "2 of 8 requests failed (first: timeout)"])  # the permanent one would repeat


def _point(valid: bool, remeasured: int | None) -> PointSummary:
    return PointSummary(
        server="base",
        point_id="decode-b1",
        workload="decode",
        kind="batch",
        isl=8,
        osl=8,
        api="completions",
        valid=valid,
        invalid_reasons=[] if valid else [SATURATED],
        n_requests=3,
        remeasured=remeasured,
    )


def test_a_remeasured_point_says_how_often_and_on_which_it_was_valid() -> None:
    assert remeasured_note(_point(True, 2)) == "re-measured 2×, valid on the 2nd"
    assert remeasured_note(_point(True, 1)) == "re-measured 1×, valid on the 1st"
    assert remeasured_note(_point(False, 2)) == "re-measured 2×, still invalid"
    assert remeasured_note(_point(True, None)) is None
    # measured once: the field is left out of summary.json, so older summaries keep their bytes
    assert "remeasured" not in _point(True, None).model_dump(mode="json")
