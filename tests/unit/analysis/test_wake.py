"""Wake integrity verdicts, recomputed from recorded fingerprints (byog.analysis.wake)."""

from __future__ import annotations

from typing import Any

import pytest

from byog.analysis import counters, wake
from byog.plans.load import parse_plan
from byog.schemas.server import FingerprintRecord, ServerRecord, SleepModeRecord, SwapRecord

TOKENS = [[4 * k + 1, 4 * k + 2, 4 * k + 3, 4 * k + 4] for k in range(wake.WAKE_PROMPTS)]
LOGPROBS = [[-0.1, -0.2, -0.3, -0.4]] * wake.WAKE_PROMPTS


def second_prompt_changed() -> list[list[int]]:
    """TOKENS with the second prompt's last two tokens replaced."""
    return [TOKENS[0], [5, 6, 0, 0], *TOKENS[2:]]


def fp(wake_no: int, tokens: list[list[int]] = TOKENS, batch: int = 1, **kw: Any) -> FingerprintRecord:
    record = FingerprintRecord(
        wake=wake_no,
        seq=None if wake_no == 0 else wake_no,
        point_id=None if wake_no == 0 else "p",
        batch=batch,
        max_tokens=4,
        cache_reset=True,
        tokens=tokens,
        logprobs=kw.pop("logprobs", LOGPROBS),
        verdict="reference",
        **kw,
    )
    return record


def judged_record(fps: list[FingerprintRecord], swaps: list[SwapRecord] | None = None) -> SleepModeRecord:
    """The record the pipeline writes: each fingerprint with the verdict byog reached on it."""
    out: list[FingerprintRecord] = []
    for f in fps:
        j = wake.judge(f, out)
        out.append(f.model_copy(update={"verdict": j.verdict, "message": j.message}))
    return SleepModeRecord(partner="b", side="A", level=1, swaps=swaps or [], fingerprints=out)


def swap(seq: int, point: str | None = "p", **kw: Any) -> SwapRecord:
    return SwapRecord(seq=seq, point_id=point, from_server="b", sleep_s=0.1, wake_s=0.1, at_unix_s=1000.0 + seq, **kw)


def test_a_b1_fingerprint_must_match_token_for_token() -> None:
    ok = judged_record([fp(0), fp(0), fp(1), fp(2, logprobs=[[-0.1, -0.2, -0.3, -0.45]] * wake.WAKE_PROMPTS)])
    assert [f.verdict for f in ok.fingerprints] == ["reference", "reference", "match", "match"]
    assert wake.compare(ok.fingerprints[0].model_dump(), ok.fingerprints[3].model_dump()).max_abs_dlogprob == (
        abs(-0.45 - -0.4)
    )
    changed = judged_record([fp(0), fp(0), fp(1), fp(2), fp(3, second_prompt_changed())])
    last = changed.fingerprints[-1]
    assert last.verdict == "changed"
    assert last.message is not None and last.message.startswith("wake integrity: outputs changed after wake 3")
    assert "1 of 8 prompts differ" in last.message


def test_references_shrunk_below_what_the_check_needs_fail_whatever_the_tokens() -> None:
    # a record whose references and wake checks both hold 1 prompt would otherwise "match" on almost nothing
    one = [TOKENS[0]]
    record = judged_record([fp(0, one, logprobs=LOGPROBS[:1]), fp(0, one, logprobs=LOGPROBS[:1]), fp(1, one)])
    assert record.fingerprints[-1].verdict == "changed"
    assert "a fingerprint before the first sleep holds 1 prompts at B=1; the check needs 8" in str(
        record.fingerprints[-1].message
    )
    assert wake.fell_back(record) is not None


def test_a_batched_fingerprint_is_judged_against_the_servers_own_aa_envelope() -> None:
    one_off = [[1, 2, 3, 4], [5, 6, 7, 9], [9, 10, 11, 12]]
    two_off = [[1, 2, 3, 5], [5, 6, 7, 9], [9, 10, 11, 12]]
    record = judged_record([fp(0, batch=3), fp(0, one_off, batch=3), fp(1, one_off, batch=3), fp(2, two_off, batch=3)])
    # the A/A pair differed in one prompt: one differing prompt after a wake is within it, two are not
    assert [f.verdict for f in record.fingerprints] == ["reference", "reference", "match", "changed"]
    assert "1 allowed" in str(record.fingerprints[-1].message)


def test_spec_decode_acceptance_that_drops_after_a_wake_invalidates_with_outputs_unchanged() -> None:
    record = judged_record(
        [fp(0, acceptance_length=5.9), fp(0, acceptance_length=5.9), fp(1, acceptance_length=5.85)]
        + [fp(2, acceptance_length=1.0)]
    )
    assert [f.verdict for f in record.fingerprints] == ["reference", "reference", "match", "changed"]
    assert record.fingerprints[-1].message is not None
    assert record.fingerprints[-1].message.startswith("acceptance 5.9 → 1.0 after wake 2: drafter not restored")
    assert wake.acceptance_length({counters.SPEC_DRAFTS: 10.0, counters.SPEC_ACCEPTED: 49.0}) == 5.9


def test_the_points_measured_since_the_last_good_fingerprint_are_the_invalid_ones() -> None:
    bad = [[0, 0, 0, 0]] * wake.WAKE_PROMPTS
    swaps = [swap(0, "p1"), swap(3, "p1"), swap(0, "p2"), swap(3, "p3")]
    record = judged_record([fp(0), fp(0), fp(1), fp(2), fp(3), fp(4, bad)], swaps)
    # wake 3 (p2, visit 0) was the last good one: p2's visits after it and p3's through wake 4 are invalid
    assert [p for p, _ in wake.invalid_points(record)] == ["p2", "p3"]
    assert all("outputs changed after wake 4" in why for _, why in wake.invalid_points(record))
    assert wake.invalid_points(judged_record([fp(0), fp(0), fp(1), fp(2)], swaps[:2])) == []


def test_an_edited_fingerprint_or_verdict_no_longer_agrees_with_its_recomputation() -> None:
    record = judged_record([fp(0), fp(0), fp(1, [[0, 0, 0, 0]] * wake.WAKE_PROMPTS)])
    assert wake.verdict_mismatches(record) == []
    # the failing fingerprint's tokens edited to match: its recorded "changed" is no longer what they give
    edited = record.model_copy(deep=True)
    edited.fingerprints[2].tokens = [list(t) for t in TOKENS]
    assert wake.verdict_mismatches(edited) == ["fingerprint 2 (wake 1) records 'changed' but its tokens give 'match'"]
    # the verdict edited instead
    flipped = record.model_copy(deep=True)
    flipped.fingerprints[2].verdict = "match"
    flipped.fingerprints[2].message = None
    assert len(wake.verdict_mismatches(flipped)) == 1


def test_swap_records_no_real_swap_makes_are_named() -> None:
    assert wake.swap_problems("s", [swap(1, level=1, gpu_used_before_bytes=9, gpu_used_asleep_bytes=2)]) == []
    assert "sleep level 3" in wake.swap_problems("s", [swap(1, level=3)])[0]
    assert "negative GPU memory" in wake.swap_problems("s", [swap(1, gpu_used_asleep_bytes=-5)])[0]
    found = wake.swap_problems("s", [swap(1, gpu_used_before_bytes=5, gpu_used_asleep_bytes=9, gpu_used_after_bytes=6)])
    assert "more GPU memory in use asleep" in found[0]
    s = swap(1, gpu_used_before_bytes=10, gpu_used_asleep_bytes=3, gpu_used_after_bytes=9)
    assert (wake.bytes_freed(s), wake.bytes_restored(s)) == (7, 6)


PLAN = """\
name: w
model: {path: /m}
servers: {cand: {}, base: {}}
baseline: base
pairs: [{candidate: cand, baseline: base, interleave: true}]
workloads:
  - {kind: batch, isl: [8], osl: [8], batch_sizes: [1], waves: 2}
"""


def test_the_summary_names_the_method_and_why() -> None:
    plan = parse_plan(PLAN, "plan.yaml")
    good = judged_record([fp(0), fp(0), fp(1)], [swap(0)])
    records = [("base", 1, ServerRecord(name="base", sleep_mode=good)), ("cand", 1, ServerRecord(name="cand"))]
    [entry] = wake.integrity(records, plan)
    assert (entry.method, entry.wakes_checked, entry.wakes_matched, entry.max_abs_dlogprob) == ("interleaved", 1, 1, 0)
    failed = judged_record([fp(0), fp(0), fp(1), fp(2, [[0, 0, 0, 0]] * wake.WAKE_PROMPTS)], [swap(0), swap(3)])
    failed.fallback_points = ["p"]
    records[0] = ("base", 1, ServerRecord(name="base", sleep_mode=failed))
    [entry] = wake.integrity(records, plan)
    assert entry.method == "interleaved, then sequential" and entry.fallback_points == ["p"]
    assert entry.why.startswith("wake integrity: outputs changed after wake 2")
    # a record from before wake checks existed says nothing
    records[0] = ("base", 1, ServerRecord(name="base", sleep_mode=SleepModeRecord(partner="cand", side="A", level=1)))
    assert wake.integrity(records, plan) == []


def test_a_fingerprint_with_fewer_logprob_rows_than_prompts_is_compared_not_crashed_on() -> None:
    short = fp(1, logprobs=LOGPROBS[:1])
    assert wake.compare(fp(0).model_dump(), short.model_dump()).identical == wake.WAKE_PROMPTS


def test_a_fallback_is_known_from_the_recorded_reason_or_from_the_fingerprints_alone() -> None:
    matched = judged_record([fp(0), fp(0), fp(1), fp(2)])
    assert wake.fell_back(matched) is None
    changed = judged_record([fp(0), fp(0), fp(1), fp(2, second_prompt_changed())])
    # the verdict is recomputed, so a record whose stored verdicts were edited to "match" still falls back
    edited = changed.model_copy(
        update={
            "fingerprints": [
                f.model_copy(update={"verdict": "reference" if f.wake == 0 else "match"}) for f in changed.fingerprints
            ]
        }
    )
    for record in (changed, edited):
        reason = wake.fell_back(record)
        assert reason is not None and reason.startswith("wake integrity: outputs changed after wake 2")
    assert wake.fell_back(matched.model_copy(update={"fallback_reason": "acceptance 5.9 → 1.0 after wake 2"})) == (
        "acceptance 5.9 → 1.0 after wake 2"
    )


FULL = [[i, i + 1, i + 2, i + 3] for i in range(32)]  # a reference of every fingerprint prompt
FULL_LOGPROBS = [[-0.1, -0.2, -0.3, -0.4]] * 32


def full(wake_no: int, tokens: list[list[int]] = FULL, batch: int = 1) -> FingerprintRecord:
    return fp(wake_no, tokens, batch=batch, logprobs=FULL_LOGPROBS[: len(tokens)])


def test_a_wake_check_of_the_first_prompts_is_judged_against_the_references_same_prompts() -> None:
    n = wake.required_prompts(1)
    assert n == wake.WAKE_PROMPTS == 8 and wake.required_prompts(32) == 32 and wake.required_prompts(16) == 16
    changed = [list(t) for t in FULL[:n]]
    changed[5] = [5, 6, 0, 0]
    record = judged_record([full(0), full(0), full(1, FULL[:n]), full(2, changed)])
    assert [f.verdict for f in record.fingerprints] == ["reference", "reference", "match", "changed"]
    assert "(B=1: 1 of 8 prompts differ" in str(record.fingerprints[-1].message)
    # an older run's check of every prompt is judged on all of them, as it was
    late = [list(t) for t in FULL]
    late[20] = [0, 0, 0, 0]
    older = judged_record([full(0), full(0), full(1), full(2, late)])
    assert [f.verdict for f in older.fingerprints] == ["reference", "reference", "match", "changed"]
    assert "(B=1: 1 of 32 prompts differ" in str(older.fingerprints[-1].message)


def test_a_batched_wake_check_is_allowed_what_the_aa_pair_differed_by_over_the_same_first_batch() -> None:
    late = [list(t) for t in FULL]
    late[20] = [0, 0, 0, 0]  # the A/A pair differed only outside the first batch of 8
    early = [list(t) for t in FULL[:8]]
    early[3] = [0, 0, 0, 0]
    record = judged_record([full(0, batch=8), full(0, late, batch=8), full(1, FULL[:8], 8), full(2, early, 8)])
    assert [f.verdict for f in record.fingerprints] == ["reference", "reference", "match", "changed"]
    assert "1 of 8 prompts differ from before the first sleep, 0 allowed" in str(record.fingerprints[-1].message)


@pytest.mark.parametrize("held", [0, 1, 7])
def test_a_wake_check_of_fewer_prompts_than_the_rule_needs_is_a_change_and_verify_says_so(held: int) -> None:
    record = judged_record([full(0), full(0), full(1, FULL[:held])])
    last = record.fingerprints[-1]
    assert last.verdict == "changed"
    assert (
        last.message
        == f"wake integrity: the fingerprint after wake 1 holds {held} prompts at B=1; the check needs the first 8"
    )
    # a bundle that records it as a match does not verify: the count comes from the rule, not the record
    claimed = record.model_copy(deep=True)
    claimed.fingerprints[-1].verdict, claimed.fingerprints[-1].message = "match", None
    assert wake.verdict_mismatches(claimed) == ["fingerprint 2 (wake 1) records 'match' but its tokens give 'changed'"]
    assert wake.fell_back(claimed) == last.message
