"""Time-to-verdict records are checked before anything is computed from them: an impossible one
fails in one sentence instead of rendering "-692003211.4% measuring share"."""

from __future__ import annotations

from typing import Any

import pytest

from byog.analysis.time_to_verdict import record_problems
from byog.plans.load import parse_plan
from byog.schemas.server import ServerRecord

PLAN = parse_plan(
    """\
name: t
model: {path: /m}
servers: {cand: {}, base: {}}
baseline: base
pairs: [{candidate: cand, baseline: base, interleave: true}]
workloads:
  - {kind: batch, name: decode, batch_sizes: [1], isl: [5], osl: [12], waves: 2}
""",
    "plan.yaml",
)
POINT = "decode-b1-isl5-osl12"
T0 = 1_764_979_200.0  # 2025-12-06 00:00 UTC
START = {"started_at": "2025-12-06T00:00:00+00:00", "ready_after_s": 30.0}


def record(**fields: Any) -> ServerRecord:
    return ServerRecord.model_validate({"name": "cand", "starts": [START], **fields})


def span(t0: float, t1: float, kind: str = "measure") -> dict[str, Any]:
    return {"kind": kind, "t0_unix_s": T0 + t0, "t1_unix_s": T0 + t1}


def swaps(*items: dict[str, Any]) -> dict[str, Any]:
    base = {"point_id": POINT, "from_server": "base", "sleep_s": 0.5, "wake_s": 0.6, "at_unix_s": T0 + 40}
    return {"partner": "base", "side": "B", "level": 1, "swaps": [{**base, **item} for item in items]}


HOSTILE: dict[str, tuple[ServerRecord, str]] = {
    "a negative span": (record(activity=[span(100, 40)]), "a measure span ends 60.0 s before it starts"),
    "a span of 40 days": (record(activity=[span(40, 40 + 40 * 86400)]), "a measure span lasts 40 days"),
    "a 31-year start-up": (
        record(starts=[{"started_at": "1995-01-01T00:00:00+00:00", "ready_after_s": 30.0}], activity=[span(40, 50)]),
        "more than any run",
    ),
    "a start-up of negative length": (
        record(starts=[{**START, "ready_after_s": -5.0}], activity=[span(40, 50)]),
        "a start-up took -5.0 s",
    ),
    "a span before the server started": (record(activity=[span(-3600, 50)]), "starts 3600.0 s before the server did"),
    "a start time that is not a time": (
        record(starts=[{**START, "started_at": "yesterday"}], activity=[span(40, 50)]),
        "is not a time",
    ),
    "sleep_s < 0": (record(activity=[span(40, 50)], sleep_mode=swaps({"seq": 1, "sleep_s": -1.0})), "slept -1.0 s"),
    "swap seq out of range": (
        record(activity=[span(40, 50)], sleep_mode=swaps({"seq": 9})),
        f"a swap before visit 9 of {POINT} is outside it",
    ),
    "swap of an unknown point": (
        record(activity=[span(40, 50)], sleep_mode=swaps({"seq": 1, "point_id": "nowhere"})),
        "is outside it",
    ),
}


def test_a_possible_record_has_nothing_to_say() -> None:
    sane = record(
        activity=[span(40, 50), span(50, 51, "swap")], sleep_mode=swaps({"seq": 1}, {"seq": -1, "point_id": None})
    )
    assert record_problems([("cand", 1, sane)], PLAN) == []


@pytest.mark.parametrize("case", list(HOSTILE))
def test_an_impossible_record_fails_in_one_sentence(case: str) -> None:
    rec, sentence = HOSTILE[case]
    problems = record_problems([("cand", 1, rec)], PLAN)
    assert problems and sentence in problems[0] and "\n" not in problems[0], problems
