"""Integrity: before the signer is known, the manifest parses (size-capped, bounded JSON,
canonical); once it is trusted, every file matches its sha256 (hashed as the archive streamed by).
An untrusted bundle's other members are never read, so their hashes are not checked."""

from __future__ import annotations

import hashlib

from byog.bundles.checks.base import VerifyContext, check
from byog.bundles.manifest import parse_statement
from byog.core.errors import CheckFailed
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME
from byog.schemas.manifest import Statement

_CHUNK = 1 << 20


@check("manifest", gated=False, isolated=False)
def manifest_parses(ctx: VerifyContext) -> str:
    if not ctx.has(MANIFEST_NAME):
        raise CheckFailed(f"the bundle has no {MANIFEST_NAME}")
    ctx.manifest_bytes = ctx.read(MANIFEST_NAME)  # size-capped before it is read
    ctx.statement = parse_statement(ctx.manifest_bytes)
    return f"in-toto statement with {len(ctx.statement.subject)} subjects"


def require_statement(ctx: VerifyContext) -> Statement:
    if ctx.statement is None:
        raise CheckFailed("not checked: the manifest could not be read")
    return ctx.statement


def _sha256(ctx: VerifyContext, name: str) -> str:
    if name in ctx.digests:  # hashed as it was extracted: reading 10,000 files back costs seconds
        return ctx.digests[name]
    digest = hashlib.sha256()
    with (ctx.root / name).open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@check("hashes", requires=("manifest",), isolated=False)
def hashes_match(ctx: VerifyContext) -> str:
    statement = require_statement(ctx)
    listed = [subject.name for subject in statement.subject]
    if len(set(listed)) != len(listed):
        raise CheckFailed("the manifest lists a file twice")
    for name in (MANIFEST_NAME, SIGNATURE_NAME):
        if name in listed:
            raise CheckFailed(f"the manifest lists {name}, which cannot hash itself")
    for subject in statement.subject:
        if not ctx.has(subject.name):
            raise CheckFailed(f"{subject.name} is listed in the manifest but missing from the bundle")
        if _sha256(ctx, subject.name) != subject.digest.sha256:
            raise CheckFailed(f"{subject.name} does not match its sha256 in the manifest (changed after sealing)")
    unlisted = sorted(set(ctx.names) - set(listed) - {MANIFEST_NAME, SIGNATURE_NAME})
    if unlisted:
        raise CheckFailed(f"{len(unlisted)} file(s) not in the manifest: {', '.join(unlisted[:5])}")
    return f"{len(listed)} files match their sha256"
