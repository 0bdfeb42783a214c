"""Attestations: attestations.intoto.jsonl is derived data, so verify rebuilds it from the recomputed
summary and the raw files (``byog.bundles.attestations``) and holds the shipped copy to it byte for byte.

The rebuilt lines go back in the result's details, for ``verify --emit-attestations``.
"""

from __future__ import annotations

from byog.bundles.attestations import ATTESTATIONS_NAME, attestations_bytes
from byog.bundles.checks.base import Found, Skipped, VerifyContext, check
from byog.bundles.checks.recompute import stated_summary
from byog.core.errors import CheckFailed


@check("attestations", requires=("summary",))
def attestations_rebuild(ctx: VerifyContext) -> Found:
    if not ctx.has(ATTESTATIONS_NAME):
        raise Skipped(f"the bundle has no {ATTESTATIONS_NAME} (packed before byog wrote one)")
    shipped = ctx.read(ATTESTATIONS_NAME)
    rebuilt = attestations_bytes(ctx.run_dir, stated_summary(ctx))
    if shipped != rebuilt:
        ours, theirs = rebuilt.splitlines(), shipped.splitlines()
        if len(ours) != len(theirs):
            raise CheckFailed(
                f"{ATTESTATIONS_NAME} holds {len(theirs)} statements, rebuilt from the bundle {len(ours)}"
            )
        line = next(n for n, (a, b) in enumerate(zip(ours, theirs, strict=True), start=1) if a != b)
        raise CheckFailed(f"{ATTESTATIONS_NAME} line {line} differs from the statement rebuilt from the bundle")
    lines = rebuilt.decode("utf-8").splitlines()
    return Found(f"{len(lines)} in-toto test-result statements rebuild byte for byte", details={"statements": lines})
