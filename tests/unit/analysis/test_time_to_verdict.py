"""Time-to-verdict records are checked before anything is computed from them: an impossible one
fails in one sentence instead of rendering "-692003211.4% measuring share"."""

from __future__ import annotations

import pytest

from byog.analysis.time_to_verdict import record_problems
from tests.support.hostile_47 import HOSTILE_TIMES, PLAN, record, span, swaps


def test_a_possible_record_has_nothing_to_say() -> None:
    sane = record(
        activity=[span(40, 50), span(50, 51, "swap")], sleep_mode=swaps({"seq": 1}, {"seq": -1, "point_id": None})
    )
    assert record_problems([("cand", 1, sane)], PLAN) == []


@pytest.mark.parametrize("case", list(HOSTILE_TIMES))
def test_an_impossible_record_fails_in_one_sentence(case: str) -> None:
    rec, sentence = HOSTILE_TIMES[case]
    problems = record_problems([("cand", 1, rec)], PLAN)
    assert problems and sentence in problems[0] and "\n" not in problems[0], problems
