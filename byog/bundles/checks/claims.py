"""Claims: the numbers a PR states, held against the recomputed summary within their tolerance.

Claims come from the bundle itself (claims.yaml, copied into the signed predicate) and from
``--claims FILE``; every one must hold. ``byog.schemas.claims`` documents the file.
"""

from __future__ import annotations

from typing import Any

from byog.bundles.checks.base import Skipped, VerifyContext, check
from byog.bundles.checks.recompute import _derive
from byog.bundles.points import metric_value, one_point
from byog.errors import CheckFailed
from byog.schemas.claims import Claim, ClaimsFile, RatioClaim, ValueClaim, VerdictClaim


def _label(claim: Claim) -> str:
    if claim.name:
        return claim.name
    if isinstance(claim, VerdictClaim):
        return f"{claim.task} {claim.candidate} {claim.verdict}"
    where = claim.point or ",".join(f"{k}={v}" for k, v in (claim.select or {}).items())
    who = claim.server if isinstance(claim, ValueClaim) else f"{claim.candidate}/{claim.baseline}"
    return f"{who} {where} {claim.metric}"


def measured(summary: dict[str, Any], claim: ValueClaim | RatioClaim) -> float:
    if isinstance(claim, ValueClaim):
        return metric_value(one_point(summary, claim.server, point=claim.point, select=claim.select), claim.metric)
    candidate = metric_value(one_point(summary, claim.candidate, point=claim.point, select=claim.select), claim.metric)
    baseline = metric_value(one_point(summary, claim.baseline, point=claim.point, select=claim.select), claim.metric)
    if baseline == 0:
        raise CheckFailed(f"claim '{_label(claim)}': the baseline's {claim.metric} is 0, so there is no ratio")
    return candidate / baseline


def check_claim(summary: dict[str, Any], claim: Claim) -> str:
    """One sentence when the claim holds; CheckFailed naming the claim and the measured value otherwise."""
    if isinstance(claim, VerdictClaim):
        verdicts = [v for v in summary.get("evals", {}).get("verdicts", []) if v.get("task") == claim.task and v.get("candidate") == claim.candidate]
        got = sorted({str(v.get("verdict")) for v in verdicts})
        if got != [claim.verdict]:
            raise CheckFailed(f"claim '{_label(claim)}': the recomputed verdict is {', '.join(got) or 'missing'}")
        return f"{_label(claim)}: holds"
    got = measured(summary, claim)
    if abs(got - claim.value) > claim.tolerance * abs(claim.value):
        off = (got / claim.value - 1) * 100 if claim.value else float("inf")
        raise CheckFailed(
            f"claim '{_label(claim)}' = {claim.value:g} but the bundle says {got:.4g} ({off:+.1f}%, tolerance {claim.tolerance:.0%})"
        )
    return f"{_label(claim)}: {got:.4g} vs claimed {claim.value:g}"


@check("claims", requires=("schemas",))
def claims_hold(ctx: VerifyContext) -> str:
    embedded = ctx.statement.predicate.claims if ctx.statement is not None else []
    claims: list[Claim] = list(ClaimsFile.model_validate({"claims": embedded}).claims) if embedded else []
    if ctx.claims is not None:
        claims += ctx.claims.claims
    if not claims:
        raise Skipped("no claims in the bundle and no --claims given")
    # A claim no bundle can check yet (its workload is not implemented) is listed, never passed.
    unchecked = [_label(claim) for claim in claims if claim.not_checked]
    claims = [claim for claim in claims if not claim.not_checked]
    not_checked = f"; {len(unchecked)} not checked ({', '.join(unchecked)})" if unchecked else ""
    if not claims:
        raise Skipped(f"no claim can be checked{not_checked}")
    summary = _derive(ctx)
    failures, held = [], []
    for claim in claims:
        try:
            held.append(check_claim(summary, claim))
        except CheckFailed as err:
            failures.append(str(err))
    ctx.notes["claims"] = {"held": held, "failed": failures, "not_checked": unchecked}
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise CheckFailed(f"{failures[0]}{more}{not_checked}")
    return f"{len(claims)} claim(s) hold within their tolerance{not_checked}"
