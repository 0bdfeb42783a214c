"""Wake integrity: did a woken server serve the same model, and how long does a wake-up's effect last.

Pure functions of the recorded fingerprints (byog.bench.fingerprint), spec-decode acceptance and
swaps; the pipeline judges with them while it runs and verify recomputes the same verdicts.

- **B = 1**: a fingerprint after a wake must equal the one before the first sleep token for token
  (vLLM's CUDA build is exact here: 13 wakes on an H200, max |Δlogprob| 0).
- **Batched**: not exact even before any sleep, so the prompts that differ from the reference may
  number at most what the server's own A/A pair (two fingerprints before any sleep) differed by.
- **After a wake** the fingerprint may hold only the reference's first ``required_prompts`` prompts
  (B = 1: ``WAKE_PROMPTS``; batched: the reference's first batch); it is judged against the
  reference's same first prompts, and the A/A allowance is counted over those prompts too. One
  holding fewer is a change, whatever its tokens; one holding more is judged on all of them.
- **Acceptance** (speculative decoding; lossless, so outputs cannot show a lost drafter): the mean
  acceptance length after a wake may fall below the A/A pair's lower value by at most their spread,
  or ``ACCEPTANCE_FLOOR`` of it, whichever is larger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from byog.analysis import counters
from byog.schemas.bench import WakeIntegrity
from byog.schemas.plan import Plan
from byog.schemas.server import FingerprintRecord, ServerRecord, SleepModeRecord, SwapRecord

ACCEPTANCE_FLOOR = 0.02  # relative: two identical greedy runs can differ by a scheduling step
# A broken wake (a level-2 wake without reload_weights) served garbage on every prompt, and B = 1 is
# exact on CUDA, so 8 prompts x 32 tokens see it at a quarter of a full fingerprint's cost.
WAKE_PROMPTS = 8


@dataclass(frozen=True)
class Comparison:
    """One fingerprint against the reference."""

    prompts: int
    identical: int  # prompts whose token ids are all equal
    max_abs_dlogprob: float  # over positions before each prompt's first differing token


def compare(ref: Mapping[str, Any], got: Mapping[str, Any]) -> Comparison:
    """Token ids prompt by prompt; |Δlogprob| of the chosen token where both chose the same ones so far."""
    ref_tokens, got_tokens = list(ref["tokens"]), list(got["tokens"])
    identical, worst = 0, 0.0
    for i in range(max(len(ref_tokens), len(got_tokens))):
        a = ref_tokens[i] if i < len(ref_tokens) else None
        b = got_tokens[i] if i < len(got_tokens) else None
        if a is None or b is None:
            continue
        identical += int(list(a) == list(b))
        la, lb = (list(x["logprobs"][i]) if i < len(x["logprobs"]) else [] for x in (ref, got))  # hostile: short
        for pos, (ta, tb) in enumerate(zip(a, b, strict=False)):
            if ta != tb:
                break
            if pos < len(la) and pos < len(lb):
                worst = max(worst, abs(float(la[pos]) - float(lb[pos])))
    return Comparison(prompts=max(len(ref_tokens), len(got_tokens)), identical=identical, max_abs_dlogprob=worst)


def required_prompts(batch: int) -> int:
    """Prompts a fingerprint after a wake must hold, and its references at least: at B = 1 the first
    ``WAKE_PROMPTS``, batched the reference's first batch (the same prompts sent together)."""
    return WAKE_PROMPTS if batch <= 1 else batch


def first_prompts(fingerprint: Mapping[str, Any], n: int) -> dict[str, Any]:
    """A fingerprint's tokens and logprobs of its first ``n`` prompts."""
    return {"tokens": list(fingerprint["tokens"])[:n], "logprobs": list(fingerprint["logprobs"])[:n]}


def allowed_differing(batch: int, aa: Comparison | None) -> int:
    """Prompts that may differ from the reference: none at B = 1, the A/A pair's count when batched."""
    if batch <= 1 or aa is None:
        return 0
    return aa.prompts - aa.identical


def outputs_match(batch: int, comparison: Comparison, aa: Comparison | None) -> bool:
    return comparison.prompts - comparison.identical <= allowed_differing(batch, aa)


def acceptance_length(deltas: Mapping[str, Any]) -> float | None:
    """Mean tokens per drafting step, 1 + accepted / drafts, from vLLM's spec-decode counter deltas."""
    drafts = float(deltas.get(counters.SPEC_DRAFTS) or 0.0)
    return 1.0 + float(deltas.get(counters.SPEC_ACCEPTED) or 0.0) / drafts if drafts > 0 else None


def acceptance_floor(aa: Sequence[float]) -> float:
    """The lowest acceptance length a woken server may show: the A/A pair's lower value less its envelope."""
    low, high = min(aa), max(aa)
    return low - max(high - low, ACCEPTANCE_FLOOR * low)


def acceptance_holds(aa: Sequence[float], after: float | None) -> bool:
    return after is not None and after >= acceptance_floor(aa)


Verdict = Literal["reference", "match", "changed"]


@dataclass(frozen=True)
class Judged:
    verdict: Verdict
    message: str | None


def judge(fingerprint: FingerprintRecord, earlier: Sequence[FingerprintRecord]) -> Judged:
    """The verdict on ``fingerprint`` given the server's fingerprints before it (the references among them)."""
    if fingerprint.wake == 0:
        return Judged("reference", None)
    refs = [f for f in earlier if f.wake == 0 and f.batch == fingerprint.batch]
    if not refs:
        return Judged("changed", f"wake integrity: no fingerprint before the first sleep at B={fingerprint.batch}")
    full = refs[0].model_dump()
    need, held = required_prompts(fingerprint.batch), len(fingerprint.tokens)
    short = min(len(r.tokens) for r in refs)
    if short < need:  # a record that shrank its references would make any check trivially "match"
        return Judged(
            "changed",
            f"wake integrity: a fingerprint before the first sleep holds {short} prompts at B={fingerprint.batch}; "
            f"the check needs {need}",
        )
    if held < need:
        return Judged(
            "changed",
            f"wake integrity: the fingerprint after wake {fingerprint.wake} holds {held} prompts at "
            f"B={fingerprint.batch}; the check needs the first {need}",
        )
    ref = first_prompts(full, held)
    aa = compare(ref, first_prompts(refs[1].model_dump(), held)) if len(refs) > 1 else None
    got = compare(ref, fingerprint.model_dump())
    if not outputs_match(fingerprint.batch, got, aa):
        allowed = allowed_differing(fingerprint.batch, aa)
        return Judged(
            "changed",
            f"wake integrity: outputs changed after wake {fingerprint.wake} (B={fingerprint.batch}: "
            f"{got.prompts - got.identical} of {got.prompts} prompts differ from before the first sleep, "
            f"{allowed} allowed)",
        )
    accepted = [f.acceptance_length for f in refs if f.acceptance_length is not None]
    if accepted and not acceptance_holds(accepted, fingerprint.acceptance_length):
        after = "none" if fingerprint.acceptance_length is None else f"{fingerprint.acceptance_length:.1f}"
        return Judged(
            "changed",
            f"acceptance {min(accepted):.1f} → {after} after wake {fingerprint.wake}: drafter not restored "
            f"(floor {acceptance_floor(accepted):.2f} from the A/A pair)",
        )
    return Judged("match", None)


def judged(record: SleepModeRecord) -> list[Judged]:
    """Every recorded fingerprint's verdict, recomputed in record order."""
    return [judge(f, record.fingerprints[:i]) for i, f in enumerate(record.fingerprints)]


def verdict_mismatches(record: SleepModeRecord) -> list[str]:
    """Where a recorded verdict or message is not what the recorded fingerprints give."""
    out = []
    for i, (fp, again) in enumerate(zip(record.fingerprints, judged(record), strict=True)):
        if (fp.verdict, fp.message) != (again.verdict, again.message):
            out.append(f"fingerprint {i} (wake {fp.wake}) records '{fp.verdict}' but its tokens give '{again.verdict}'")
    return out


def fell_back(record: SleepModeRecord) -> str | None:
    """Why a pair stopped interleaving, as this side's record shows it: the recorded fallback reason, else
    the first wake check its fingerprints fail (recomputed, so a run stopped before the fallback was
    recorded still knows); None while every wake matched."""
    if record.fallback_reason:
        return record.fallback_reason
    return next(
        (
            str(again.message)
            for fp, again in zip(record.fingerprints, judged(record), strict=True)
            if fp.wake > 0 and again.verdict == "changed"
        ),
        None,
    )


def invalid_points(record: SleepModeRecord) -> list[tuple[str, str]]:
    """(point, why) of every point where the server measured a visit since its last good fingerprint
    before one that changed. Wake k's fingerprints follow the k-th swap that woke it (``swaps[k - 1]``):
    from the last good wake's swap (its point goes on after it) through the failing one's."""
    failed: dict[int, str] = {}
    for fp, again in zip(record.fingerprints, judged(record), strict=True):
        if fp.wake > 0 and again.verdict == "changed":
            failed.setdefault(fp.wake, str(again.message))
    out: list[tuple[str, str]] = []
    good = 0
    for k in sorted({f.wake for f in record.fingerprints if f.wake > 0}):
        if k not in failed:
            good = k
            continue
        for swap in record.swaps[max(good - 1, 0) : k]:
            if swap.point_id is not None and (swap.point_id, failed[k]) not in out:
                out.append((swap.point_id, failed[k]))
    return out


def swap_problems(where: str, swaps: Sequence[SwapRecord]) -> list[str]:
    """What no real swap records: a level vLLM has not, GPU memory below zero or freed/restored below zero."""
    out = []
    for s in swaps:
        if s.level is not None and s.level not in (1, 2):
            out.append(f"{where}: a swap at visit {s.seq} records sleep level {s.level}; vLLM has levels 1 and 2")
        before, asleep, after = s.gpu_used_before_bytes, s.gpu_used_asleep_bytes, s.gpu_used_after_bytes
        if any(m is not None and m < 0 for m in (before, asleep, after)):
            out.append(f"{where}: a swap at visit {s.seq} records negative GPU memory in use")
        elif before is not None and asleep is not None and after is not None and asleep > min(before, after):
            out.append(
                f"{where}: a swap at visit {s.seq} records more GPU memory in use asleep than before the sleep "
                "or after the wake"
            )
        if s.warmup_waves < 0:
            out.append(f"{where}: a swap at visit {s.seq} records {s.warmup_waves} warm-up waves")
    return out


def bytes_freed(swap: SwapRecord) -> int | None:
    if swap.gpu_used_before_bytes is None or swap.gpu_used_asleep_bytes is None:
        return None
    return swap.gpu_used_before_bytes - swap.gpu_used_asleep_bytes


def bytes_restored(swap: SwapRecord) -> int | None:
    if swap.gpu_used_after_bytes is None or swap.gpu_used_asleep_bytes is None:
        return None
    return swap.gpu_used_after_bytes - swap.gpu_used_asleep_bytes


def integrity(records: Sequence[tuple[str, int, ServerRecord]], plan: Plan) -> list[WakeIntegrity]:
    """Per interleaved pair and launch: its wake checks recomputed from the fingerprints, and the method."""
    by_key = {(name, launch): record for name, launch, record in records}
    launches = sorted({launch for _, launch, _ in records})
    out = []
    for candidate, baseline in plan.interleaved_pairs:
        for launch in launches:
            modes = [
                r.sleep_mode
                for r in (by_key.get((candidate, launch)), by_key.get((baseline, launch)))
                if r is not None and r.sleep_mode is not None
            ]
            if not any(m.fingerprints for m in modes):
                continue  # recorded before wake checks existed: nothing to say
            woken = [(f, j) for m in modes for f, j in zip(m.fingerprints, judged(m), strict=True) if f.wake > 0]
            changed = sorted({str(j.message) for _, j in woken if j.verdict == "changed"})
            exact = [
                compare(_reference(m, f.batch), f.model_dump()).max_abs_dlogprob
                for m in modes
                for f in m.fingerprints
                if f.wake > 0 and f.batch == 1 and _reference(m, 1)
            ]
            fallback = sorted({p for m in modes for p in m.fallback_points})
            method: Literal["interleaved", "sequential", "interleaved, then sequential"]
            if changed or fallback:
                method = "sequential" if not any(m.swaps for m in modes) else "interleaved, then sequential"
                why = (
                    f"{changed[0] if changed else 'a wake check failed'}: the points measured since the last "
                    f"good fingerprint were re-measured sequentially ({', '.join(fallback) or 'none left'})"
                )
            else:
                method = "interleaved"
                why = (
                    f"every woken server matched its fingerprint from before its first sleep ({len(woken)} checks)"
                    if woken
                    else "no wake came before a measurement"
                )
            out.append(
                WakeIntegrity(
                    candidate=candidate,
                    baseline=baseline,
                    launch=launch,
                    method=method,
                    why=why,
                    wakes_checked=len(woken),
                    wakes_matched=sum(j.verdict == "match" for _, j in woken),
                    max_abs_dlogprob=max(exact) if exact else None,
                    changed=changed,
                    fallback_points=fallback,
                )
            )
    return out


def _reference(mode: SleepModeRecord, batch: int) -> dict[str, Any]:
    """The fingerprint before the first sleep at ``batch`` ({} where none was taken)."""
    refs = [f for f in mode.fingerprints if f.wake == 0 and f.batch == batch]
    return refs[0].model_dump() if refs else {}
