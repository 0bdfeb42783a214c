"""Claims: the numbers a PR states, held against the recomputed summary within their tolerance.

Claims come from the bundle itself (claims.yaml, copied into the signed predicate) and from
``--claims FILE``; every one must hold (one at a point flagged invalid does not), and claims that
are all ``not_checked`` fail: they check nothing. ``byog.schemas.claims`` documents the file; what a claim
means (``check_claim``) lives in ``byog.analysis.claims``, shared with the report's headline.
"""

from __future__ import annotations

from pydantic import ValidationError

from byog.analysis.claims import check_claim, claim_label
from byog.bundles.checks.base import Found, Skipped, VerifyContext, check, counted
from byog.bundles.checks.recompute import derived_summary
from byog.core.errors import CheckFailed
from byog.schemas.claims import Claim, ClaimsFile


@check("claims", requires=("schemas",))
def claims_hold(ctx: VerifyContext) -> Found:
    embedded = ctx.statement.predicate.claims if ctx.statement is not None else []
    try:
        claims: list[Claim] = list(ClaimsFile.model_validate({"claims": embedded}).claims) if embedded else []
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise CheckFailed(f"the bundle's claims are not valid at '{where}': {first['msg']}") from None
    repeated = 0
    if ctx.claims is not None:  # a --claims claim the bundle already signed is one claim, not two
        given = [claim for claim in ctx.claims.claims if claim not in claims]
        repeated = len(ctx.claims.claims) - len(given)
        claims += given
    if not claims:
        raise Skipped("no claims in the bundle and no --claims given")
    # A claim no bundle can check yet (its workload is not implemented) is listed, never passed.
    unchecked = [claim_label(claim) for claim in claims if claim.not_checked]
    claims = [claim for claim in claims if not claim.not_checked]
    not_checked = f"; {len(unchecked)} not checked ({', '.join(unchecked)})" if unchecked else ""
    if repeated:
        not_checked += f"; {repeated} --claims claim(s) already in the bundle counted once"
    if not claims:  # a claims file that checks nothing vouches for nothing
        raise CheckFailed(f"none of the {len(unchecked)} claim(s) can be checked{not_checked}")
    summary = derived_summary(ctx)
    failures, held = [], []
    for claim in claims:
        try:
            held.append(check_claim(summary, claim))
        except CheckFailed as err:
            failures.append(str(err))
    details = {"held": held, "failed": failures, "not_checked": unchecked}
    if failures:
        return Found(f"{counted(failures, 'claims fail')}{not_checked}", failed=True, details=details)
    return Found(f"{len(claims)} claim(s) hold within their tolerance{not_checked}", details=details)
