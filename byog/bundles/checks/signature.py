"""Who signed: the SSH signature over the manifest, held against an allowed_signers file."""

from __future__ import annotations

import json

from byog.bundles.checks.base import Skipped, VerifyContext, check
from byog.bundles.manifest import SIGNATURE_NAME, SIGNER_NAME
from byog.bundles.sign import default_allowed_signers, verify_signature
from byog.errors import CheckFailed


@check("signature", requires=("manifest",))
def signed_by_allowed_signer(ctx: VerifyContext) -> str:
    if ctx.manifest_bytes is None:
        raise CheckFailed("not checked: the manifest could not be read")
    if not ctx.has(SIGNATURE_NAME):
        if ctx.allow_unsigned:
            raise Skipped("the bundle is unsigned (allowed by --allow-unsigned)")
        raise CheckFailed("the bundle is unsigned: nobody vouches for it (pass --allow-unsigned to check it anyway)")
    allowed = ctx.allowed_signers or default_allowed_signers()
    result = verify_signature(ctx.manifest_bytes, ctx.read(SIGNATURE_NAME), allowed)
    ctx.signer = f"{result.principal} ({result.fingerprint})"
    if ctx.has(SIGNER_NAME):
        declared = json.loads(ctx.read(SIGNER_NAME)).get("fingerprint")
        if declared != result.fingerprint:
            raise CheckFailed(f"{SIGNER_NAME} names key {declared} but the manifest was signed by {result.fingerprint}")
    return f"signed by {ctx.signer}"
