"""Wake integrity: did a woken server serve the same model, and how long does a wake-up's effect last.

Pure functions of the recorded fingerprints (byog.bench.fingerprint), spec-decode acceptance and
swaps; the pipeline judges with them while it runs and verify recomputes the same verdicts.

- **B = 1**: a fingerprint after a wake must equal the one before the first sleep token for token
  (vLLM's CUDA build is exact here: 13 wakes on an H200, max |Δlogprob| 0).
- **Batched**: not exact even before any sleep, so the prompts that differ from the reference may
  number at most what the server's own A/A pair (two fingerprints before any sleep) differed by.
- **Acceptance** (speculative decoding; lossless, so outputs cannot show a lost drafter): the mean
  acceptance length after a wake may fall below the A/A pair's lower value by at most their spread,
  or ``ACCEPTANCE_FLOOR`` of it, whichever is larger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ACCEPTANCE_FLOOR = 0.02  # relative: two identical greedy runs can differ by a scheduling step


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
        la, lb = ref["logprobs"][i], got["logprobs"][i]
        for pos, (ta, tb) in enumerate(zip(a, b, strict=False)):
            if ta != tb:
                break
            if pos < len(la) and pos < len(lb):
                worst = max(worst, abs(float(la[pos]) - float(lb[pos])))
    return Comparison(prompts=max(len(ref_tokens), len(got_tokens)), identical=identical, max_abs_dlogprob=worst)


def allowed_differing(batch: int, aa: Comparison | None) -> int:
    """Prompts that may differ from the reference: none at B = 1, the A/A pair's count when batched."""
    if batch <= 1 or aa is None:
        return 0
    return aa.prompts - aa.identical


def outputs_match(batch: int, comparison: Comparison, aa: Comparison | None) -> bool:
    return comparison.prompts - comparison.identical <= allowed_differing(batch, aa)


def acceptance_length(deltas: Mapping[str, float]) -> float | None:
    """Mean tokens per drafting step, 1 + accepted / drafts, from vLLM's spec-decode counter deltas."""
    drafts = deltas.get("drafts") or 0.0
    return 1.0 + float(deltas.get("accepted") or 0.0) / drafts if drafts > 0 else None


def acceptance_floor(aa: Sequence[float]) -> float:
    """The lowest acceptance length a woken server may show: the A/A pair's lower value less its envelope."""
    low, high = min(aa), max(aa)
    return low - max(high - low, ACCEPTANCE_FLOOR * low)


def acceptance_holds(aa: Sequence[float], after: float | None) -> bool:
    return after is not None and after >= acceptance_floor(aa)
