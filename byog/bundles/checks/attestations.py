"""Attestations: attestations.intoto.jsonl is derived data, so verify rebuilds it from the recomputed
summary and the raw files (``byog.bundles.attestations``), under the rules of the bundle's report
format, and holds the shipped copy to it byte for byte.

The lines verify re-issues (``verify --emit-attestations``, the result's details) are rebuilt under
today's rules: a bundle that declares an older format keeps verifying, but verify never re-issues a
PASSED that its own first screen's warnings undermine.
"""

from __future__ import annotations

from byog.bundles.attestations import ATTESTATIONS_NAME, attestations_bytes
from byog.bundles.checks.base import Found, Skipped, VerifyContext, check
from byog.bundles.checks.recompute import derived_summary, stated_summary
from byog.core.errors import CheckFailed
from byog.report.markdown import REPORT_VERSION
from byog.report.versions import version_of


def bundle_report_format(ctx: VerifyContext) -> int:
    """The report format the bundle was written in (the manifest's, held to report.md's marker); the
    current one where that cannot be read (the report check says why), so the strictest rules apply."""
    declared = ctx.statement.predicate.report_format if ctx.statement is not None else None
    if not ctx.has("report.md"):
        return REPORT_VERSION
    try:
        return version_of(ctx.read("report.md").decode("utf-8"), declared)
    except (CheckFailed, UnicodeDecodeError):
        return REPORT_VERSION


@check("attestations", requires=("summary",))
def attestations_rebuild(ctx: VerifyContext) -> Found:
    if not ctx.has(ATTESTATIONS_NAME):
        raise Skipped(f"the bundle has no {ATTESTATIONS_NAME} (packed before byog wrote one)")
    shipped = ctx.read(ATTESTATIONS_NAME)
    version = bundle_report_format(ctx)
    rebuilt = attestations_bytes(ctx.run_dir, stated_summary(ctx), version)
    if shipped != rebuilt:
        ours, theirs = rebuilt.splitlines(), shipped.splitlines()
        if len(ours) != len(theirs):
            raise CheckFailed(
                f"{ATTESTATIONS_NAME} holds {len(theirs)} statements, rebuilt from the bundle {len(ours)}"
            )
        line = next(n for n, (a, b) in enumerate(zip(ours, theirs, strict=True), start=1) if a != b)
        raise CheckFailed(f"{ATTESTATIONS_NAME} line {line} differs from the statement rebuilt from the bundle")
    today = rebuilt if version >= REPORT_VERSION else attestations_bytes(ctx.run_dir, derived_summary(ctx))
    lines = today.decode("utf-8").splitlines()
    count = len(rebuilt.splitlines())
    return Found(f"{count} in-toto test-result statements rebuild byte for byte", details={"statements": lines})
