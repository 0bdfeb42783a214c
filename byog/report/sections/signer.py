"""Signer: the key the bundle is signed with (signer.json), and how a reader checks it."""

from __future__ import annotations

from byog.core.safe_text import md_code
from byog.report.context import ReportContext


def section(ctx: ReportContext) -> list[str]:
    signer = ctx.signer
    if signer is None:
        return ["## Signer", "", "Unsigned: no signing key was configured when this run was sealed.", ""]
    key_type = signer.public_key.split(" ")[0] or "ssh"
    return [
        "## Signer",
        "",
        f"Signed with {md_code(key_type)} key {md_code(signer.fingerprint)}. "
        "`byog verify` checks the signature against the allowed signers (`byog keys add GITHUB_USER`) "
        "and recomputes every number above from the raw rows.",
        "",
    ]
