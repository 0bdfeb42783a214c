"""The wake check the interleaved pair runs: its shapes come from the pair's batch points."""

from __future__ import annotations

import pytest

from byog.pipeline.wake_check import WakeCheck, WakeIntegrityFailure
from byog.plans.load import parse_plan
from tests.support.fake_vllm import FakeVllm
from tests.unit.analysis.test_wake import PLAN as WAKE_PLAN

PLAN = WAKE_PLAN.replace("isl: [8]", "isl: [12, 64]").replace("batch_sizes: [1]", "batch_sizes: [1, 8]")


def test_references_of_every_prompt_then_a_check_per_wake_of_the_first_prompts_at_b1_and_the_largest_batch() -> None:
    fake = FakeVllm(sleep_mode=True, changes_after_wake=2)
    try:
        check = WakeCheck(parse_plan(PLAN, "plan.yaml"), ("base", "cand"), fake.base_url, "fake")
        assert check.batches == [1, 8] and {len(p.split()) for p in check.prompts} == {12}
        check.before_first_sleep()
        fake.wakes = 1
        check.after_wake(0, "p")
        fake.wakes = 2
        with pytest.raises(WakeIntegrityFailure, match="outputs changed after wake 2 \\(B=1: 8 of 8"):
            check.after_wake(3, "p")
    finally:
        fake.close()
    assert [(r.wake, r.batch, r.verdict) for r in check.records] == [
        (0, 1, "reference"),
        (0, 1, "reference"),
        (0, 8, "reference"),
        (0, 8, "reference"),
        (1, 1, "match"),
        (1, 8, "match"),
        (2, 1, "changed"),
    ]
    # the references hold every prompt (the A/A pair); a wake check the first WAKE_PROMPTS at B=1 and the
    # reference's first batch of 8 at B=8: the same prompts in the same batch as the reference's first
    assert [len(r.tokens) for r in check.records] == [32, 32, 32, 32, 8, 8, 8]
    assert all(r.seconds is not None and r.seconds >= 0 for r in check.records)
