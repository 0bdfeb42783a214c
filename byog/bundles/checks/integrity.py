"""Integrity: the manifest parses, every file matches its sha256, and the predicate matches the files."""

from __future__ import annotations

import hashlib
import json

from byog.bundles.checks.base import VerifyContext, check
from byog.bundles.manifest import MANIFEST_NAME, SIGNATURE_NAME, build_statement, parse_statement, statement_bytes
from byog.errors import CheckFailed


@check("manifest")
def manifest_parses(ctx: VerifyContext) -> str:
    if not ctx.has(MANIFEST_NAME):
        raise CheckFailed(f"the bundle has no {MANIFEST_NAME}")
    ctx.manifest_bytes = ctx.read(MANIFEST_NAME)
    ctx.statement = parse_statement(ctx.manifest_bytes)
    return f"in-toto statement with {len(ctx.statement.subject)} subjects"


def _require_statement(ctx: VerifyContext):  # noqa: ANN202
    if ctx.statement is None:
        raise CheckFailed("not checked: the manifest could not be read")
    return ctx.statement


@check("hashes", requires=("manifest",))
def hashes_match(ctx: VerifyContext) -> str:
    statement = _require_statement(ctx)
    listed = [subject.name for subject in statement.subject]
    if len(set(listed)) != len(listed):
        raise CheckFailed("the manifest lists a file twice")
    for name in (MANIFEST_NAME, SIGNATURE_NAME):
        if name in listed:
            raise CheckFailed(f"the manifest lists {name}, which cannot hash itself")
    for subject in statement.subject:
        if not ctx.has(subject.name):
            raise CheckFailed(f"{subject.name} is listed in the manifest but missing from the bundle")
        digest = hashlib.sha256(ctx.read(subject.name)).hexdigest()
        if digest != subject.digest.sha256:
            raise CheckFailed(f"{subject.name} does not match its sha256 in the manifest (changed after sealing)")
    unlisted = sorted(set(ctx.names) - set(listed) - {MANIFEST_NAME, SIGNATURE_NAME})
    if unlisted:
        raise CheckFailed(f"{len(unlisted)} file(s) not in the manifest: {', '.join(unlisted[:5])}")
    return f"{len(listed)} files match their sha256"


_ABSENT = "(absent from env.json)"


def _env(files: dict[str, bytes]) -> dict:
    try:
        env = json.loads(files.get("env.json", b"{}"))
    except ValueError:
        return {}
    return env if isinstance(env, dict) else {}


@check("predicate", requires=("hashes",))
def predicate_matches_files(ctx: VerifyContext) -> str:
    """The predicate (plan hash, servers, images, hardware, claims) must be what the files say."""
    statement = _require_statement(ctx)
    files = {subject.name: ctx.read(subject.name) for subject in statement.subject if ctx.has(subject.name)}
    rebuilt = build_statement(files, compressed=statement.predicate.compressed)
    # A bundle made by another byog version is still checkable: the version is the packer's to
    # state, and so is which env.json keys it copies as hardware (each must still equal env.json).
    rebuilt.predicate.tool = statement.predicate.tool
    env = _env(files)
    rebuilt.predicate.hardware = {key: env.get(key, _ABSENT) for key in statement.predicate.hardware}
    if statement_bytes(rebuilt) != ctx.manifest_bytes:
        ours = rebuilt.predicate.model_dump(mode="json")
        theirs = statement.predicate.model_dump(mode="json")
        differing = sorted(key for key in ours if ours[key] != theirs.get(key)) or ["subject"]
        raise CheckFailed(f"the manifest's predicate does not match the bundle's files in: {', '.join(differing)}")
    servers = ", ".join(server.name for server in statement.predicate.servers) or "no servers"
    return f"plan '{statement.predicate.plan_name}' by byog {statement.predicate.tool.version}; servers: {servers}"
