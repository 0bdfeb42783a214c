"""What a claim says and whether the summary bears it out: one home for verify's claims check and
the report's headline.

A value claim holds when ``|measured - value| <= tolerance * |value|``; a ratio claim measures
candidate / baseline at the same point; a verdict claim holds when every recomputed verdict of
its (task, candidate) is the claimed one. A claim with ``not_checked`` is listed, never held, and
so is a value or ratio claim at a point flagged invalid (its number is not one to trust): "not
checked: invalid point", which fails verify like any claim that does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from byog.analysis.points import metric_value, one_point
from byog.core.errors import CheckFailed
from byog.schemas.bench import PointSummary
from byog.schemas.claims import Claim, RatioClaim, ValueClaim, VerdictClaim
from byog.schemas.summary import Summary

Outcome = Literal["holds", "fails", "not checked"]
INVALID_POINT = "not checked: invalid point"


class ClaimNotChecked(CheckFailed):
    """The claim's point is flagged invalid: it neither holds nor fails, and it is never passed."""


def claim_label(claim: Claim) -> str:
    """The claim's name, or a label built from what it selects."""
    if claim.name:
        return claim.name
    if isinstance(claim, VerdictClaim):
        return f"{claim.task} {claim.candidate} {claim.verdict}"
    where = claim.point or ",".join(f"{k}={v}" for k, v in (claim.select or {}).items())
    who = claim.server if isinstance(claim, ValueClaim) else f"{claim.candidate}/{claim.baseline}"
    return f"{who} {where} {claim.metric}"


def measured(summary: Summary, claim: ValueClaim | RatioClaim) -> float:
    """The number the summary gives for a value or ratio claim (CheckFailed when it has none)."""
    if isinstance(claim, ValueClaim):
        return metric_value(_valid_point(summary, claim, claim.server), claim.metric)
    candidate = metric_value(_valid_point(summary, claim, claim.candidate), claim.metric)
    baseline = metric_value(_valid_point(summary, claim, claim.baseline), claim.metric)
    if baseline == 0:
        raise CheckFailed(f"claim '{claim_label(claim)}': the baseline's {claim.metric} is 0, so there is no ratio")
    return candidate / baseline


def _valid_point(summary: Summary, claim: ValueClaim | RatioClaim, server: str) -> PointSummary:
    point = one_point(summary, server, point=claim.point, select=claim.select)
    if not point.valid:
        reasons = "; ".join(point.invalid_reasons) or "flagged invalid"
        raise ClaimNotChecked(
            f"claim '{claim_label(claim)}': {INVALID_POINT} ({server} '{point.point_id}': {reasons[:120]})"
        )
    return point


def check_claim(summary: Summary, claim: Claim) -> str:
    """One sentence when the claim holds; CheckFailed naming the claim and the measured value otherwise."""
    if isinstance(claim, VerdictClaim):
        verdicts = [v for v in summary.evals.verdicts if v.task == claim.task and v.candidate == claim.candidate]
        recomputed = sorted({v.verdict for v in verdicts})
        if recomputed != [claim.verdict]:
            raise CheckFailed(
                f"claim '{claim_label(claim)}': the recomputed verdict is {', '.join(recomputed) or 'missing'}"
            )
        # An unsound design cannot support a pass; "different" or "inconclusive" it can still state.
        screening = [v for v in verdicts if v.screening] if claim.verdict == "equivalent" else []
        if screening:
            worst = max(v.planned_false_fail or 0.0 for v in screening)
            raise CheckFailed(
                f"claim '{claim_label(claim)}': the verdict is a screening result (the plan's design fails "
                f"identical servers {worst:.0%} of the time), which cannot support a claim"
            )
        return f"{claim_label(claim)}: holds"
    got = measured(summary, claim)
    if abs(got - claim.value) > claim.tolerance * abs(claim.value):
        off = (got / claim.value - 1) * 100 if claim.value else float("inf")
        raise CheckFailed(
            f"claim '{claim_label(claim)}' = {claim.value:g} but the bundle says {got:.4g} ({off:+.1f}%, tolerance "
            f"{claim.tolerance:.0%})"
        )
    return f"{claim_label(claim)}: {got:.4g} vs claimed {claim.value:g}"


@dataclass(frozen=True)
class ClaimOutcome:
    label: str
    outcome: Outcome
    claimed: str  # what the claim states, e.g. "1.73 (±5%)" or "equivalent"
    got: str  # what the summary says, or why nothing was checked


def evaluate_claim(summary: Summary, claim: Claim) -> ClaimOutcome:
    """The claim's outcome as data (the report's headline); the same rule as ``check_claim``."""
    label = claim_label(claim)
    claimed: str
    claimed = claim.verdict if isinstance(claim, VerdictClaim) else f"{claim.value:g} (±{claim.tolerance:.0%})"
    if claim.not_checked:
        return ClaimOutcome(label, "not checked", claimed, claim.not_checked)
    try:
        check_claim(summary, claim)
    except ClaimNotChecked:
        return ClaimOutcome(label, "not checked", claimed, "invalid point")
    except CheckFailed as err:
        got = _got(summary, claim)
        return ClaimOutcome(label, "fails", claimed, got if got is not None else str(err))
    return ClaimOutcome(label, "holds", claimed, _got(summary, claim) or "")


def _got(summary: Summary, claim: Claim) -> str | None:
    if isinstance(claim, VerdictClaim):
        got = sorted(
            {v.verdict for v in summary.evals.verdicts if v.task == claim.task and v.candidate == claim.candidate}
        )
        return ", ".join(got) or "no verdict"
    try:
        value = measured(summary, claim)
    except CheckFailed:
        return None
    off = f" ({(value / claim.value - 1) * 100:+.1f}%)" if claim.value else ""
    return f"{value:.4g}{off}"
