"""Who signed, and for what: the SSH signature over the manifest held against an allowed_signers
file, then the manifest's signed subject held against ``--for``. Neither parses bundle content:
they read only the size-capped manifest, the signature (at most 8 KiB) and signer.json."""

from __future__ import annotations

from byog.bundles.bounds import load_json
from byog.bundles.checks.base import Skipped, VerifyContext, check
from byog.bundles.checks.integrity import require_statement
from byog.bundles.sign import default_allowed_signers, verify_signature
from byog.core.errors import CheckFailed
from byog.core.paths import SIGNATURE_NAME, SIGNER_NAME

UNSIGNED_NOTE = "content checked without a trusted signer"


@check("signature", requires=("manifest",), gated=False, isolated=False)
def signed_by_allowed_signer(ctx: VerifyContext) -> str:
    if ctx.manifest_bytes is None:
        raise CheckFailed("not checked: the manifest could not be read")
    if not ctx.has(SIGNATURE_NAME):
        if ctx.has(SIGNER_NAME):  # byog writes it only when it signs: without a signature its key is nobody
            raise CheckFailed(
                f"the bundle is unsigned, yet its {SIGNER_NAME} names a key: only a valid signature names a signer"
            )
        if ctx.allow_unsigned:
            ctx.unsigned_allowed = True
            raise Skipped(f"the bundle is unsigned (--allow-unsigned): {UNSIGNED_NOTE}")
        raise CheckFailed("the bundle is unsigned: nobody vouches for it (pass --allow-unsigned to check it anyway)")
    signature = ctx.read(SIGNATURE_NAME)  # size-capped before ssh-keygen or sshsig sees it
    allowed = ctx.allowed_signers or default_allowed_signers()
    result = verify_signature(ctx.manifest_bytes, signature, allowed)
    ctx.signer = f"{result.principal} ({result.fingerprint})"
    if ctx.has(SIGNER_NAME):
        record = load_json(ctx.read(SIGNER_NAME), SIGNER_NAME)
        declared = record.get("fingerprint") if isinstance(record, dict) else None
        if declared != result.fingerprint:
            raise CheckFailed(
                f"{SIGNER_NAME} names key {str(declared)[:60]} but the manifest was signed by {result.fingerprint}"
            )
    return f"signed by {ctx.signer}"


@check("subject", requires=("manifest",), isolated=False)
def made_for_this_subject(ctx: VerifyContext) -> str:
    subject = require_statement(ctx).predicate.subject
    wanted = ctx.subject_for
    if wanted is None:
        raise Skipped(
            f"no --for given; the bundle is for {subject.label()}"
            if subject
            else "no --for given; the bundle names no subject"
        )
    if subject is None:
        raise CheckFailed(
            f"--for {wanted.label()}: the bundle names no subject, so it could be a bundle made for anything (pack it "
            "with --for)"
        )
    why = subject.mismatch(wanted)
    if why:
        raise CheckFailed(f"{why}: a bundle made for something else cannot vouch for this one")
    note = " (unsigned: the subject is only what the bundle says)" if ctx.unsigned_allowed else ""
    return f"made for {subject.label()}{note}"
