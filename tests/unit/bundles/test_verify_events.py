"""The content child's events: parsed once by kind, and what is not an event is left out."""

from __future__ import annotations

from byog.bundles.checks.base import CheckResult
from byog.bundles.verify_events import Finished, MachineLacks, Started, parse_events


def test_events_round_trip_through_json_objects_by_kind() -> None:
    sent = [
        Started(name="claims"),
        Finished(name="claims", status="fail", message="1 claim off", details={"failed": ["x"]}),
        MachineLacks(message="no numpy"),
    ]
    got = parse_events([e.model_dump() for e in sent])
    assert got == sent
    finished = got[1]
    assert isinstance(finished, Finished)
    assert finished.result() == CheckResult("claims", "fail", "1 claim off", {"failed": ["x"]})


def test_what_is_not_an_event_is_left_out() -> None:
    raw = [
        {"event": "notes", "notes": {}},  # no such kind
        {"event": "result", "name": "claims", "status": "maybe", "message": ""},  # no such status
        {"event": "start", "name": "bounds", "extra": 1},  # a field no event has
        {"event": "start"},  # a field missing
        {"event": "start", "name": "schemas"},
    ]
    assert parse_events(raw) == [Started(name="schemas")]
