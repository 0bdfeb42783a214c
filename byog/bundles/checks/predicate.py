"""Predicate: the signed predicate (plan hash, servers, images, hardware, claims) is what the files say.

It parses plan.yaml, server.json, env.json and claims.yaml, so it runs after the signer is known,
after the bounds check, in the limited child process.
"""

from __future__ import annotations

import json

from byog.bundles.checks.base import VerifyContext, check
from byog.bundles.checks.integrity import require_statement
from byog.bundles.manifest import build_statement, statement_bytes
from byog.core.errors import CheckFailed

_ABSENT = "(absent from env.json)"


def _env(files: dict[str, bytes]) -> dict[str, object]:
    try:
        env = json.loads(files.get("env.json", b"{}"))
    except ValueError:
        return {}
    return env if isinstance(env, dict) else {}


@check("predicate", requires=("bounds",))
def predicate_matches_files(ctx: VerifyContext) -> str:
    statement = require_statement(ctx)
    files = {
        subject.name: ctx.read(subject.name)
        for subject in statement.subject
        if ctx.has(subject.name) and _describes(subject.name)
    }
    rebuilt = build_statement(
        files,
        compressed=statement.predicate.compressed,
        subject=statement.predicate.subject,
        report_format=statement.predicate.report_format,  # the report check holds report.md to it
    )
    # A bundle made by another byog version is still checkable: the version is the packer's to
    # state, and so is which env.json keys it copies as hardware (each must still equal env.json).
    rebuilt.predicate.tool = statement.predicate.tool
    env = _env(files)
    rebuilt.predicate.hardware = {key: env.get(key, _ABSENT) for key in statement.predicate.hardware}
    rebuilt.subject = statement.subject  # the hashes check already held every subject against its file
    if statement_bytes(rebuilt) != ctx.manifest_bytes:
        ours = rebuilt.predicate.model_dump(mode="json")
        theirs = statement.predicate.model_dump(mode="json")
        differing = sorted(key for key in ours if ours[key] != theirs.get(key)) or ["subject"]
        raise CheckFailed(f"the manifest's predicate does not match the bundle's files in: {', '.join(differing)}")
    servers = ", ".join(server.name for server in statement.predicate.servers) or "no servers"
    return f"plan '{statement.predicate.plan_name}' by byog {statement.predicate.tool.version}; servers: {servers}"


def _describes(name: str) -> bool:
    """The files the predicate is built from (the others are only listed by name and hash)."""
    parts = name.split("/")
    return name in ("plan.yaml", "env.json", "claims.yaml") or (
        len(parts) == 3 and parts[0] == "servers" and parts[2] == "server.json"
    )
