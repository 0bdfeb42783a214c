"""Build, write and read ``manifest.intoto.json``: the one file of a bundle that is signed.

The statement lists every other file of the bundle (path + sha256) and a predicate that says
what ran: byog's version, the plan's hash, the servers (argv, image digests), the hardware and
the run's claims. It is RFC 8785 canonical JSON, so the same bundle gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import yaml
from pydantic import ValidationError

from byog import __version__
from byog.bundles.bounds import load_json
from byog.core.canonical import canonical_json
from byog.core.errors import CheckFailed, UsageError
from byog.core.paths import CLAIMS_NAME, MANIFEST_NAME
from byog.report.versions import marker_format
from byog.schemas.claims import ClaimsFile
from byog.schemas.manifest import BundlePredicate, BundleSubject, ServerSummary, Statement, Subject, Tool

# What the manifest records of env.json (the rest stays in env.json, which is hashed anyway).
_HARDWARE_KEYS = ("cpu", "cpu_count", "memory_total_bytes", "gpu", "gpus", "os")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def summary_identity(record: dict[str, Any]) -> dict[str, Any] | None:
    """A server record's identity for the predicate: every digest, not the per-file listing."""

    def compact(identity: Any) -> Any:
        if not isinstance(identity, dict):
            return identity
        return {
            key: ({k: v for k, v in value.items() if k != "files"} if isinstance(value, dict) else value)
            for key, value in identity.items()
        }

    nodes = [n.get("identity") for n in record.get("nodes") or [] if isinstance(n, dict) and n.get("identity")]
    if record.get("identity") is None and not nodes:
        return None
    found = compact(record.get("identity")) if isinstance(record.get("identity"), dict) else {}
    return {**found, "nodes": [compact(n) for n in nodes]} if nodes else found


def _server_summaries(files: Mapping[str, bytes]) -> list[ServerSummary]:
    servers = []
    for path in sorted(files):
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == "servers" and parts[2] == "server.json":
            record = json.loads(files[path])
            digests = [str(d) for d in record.get("repo_digests") or record.get("image_digests") or []]
            servers.append(
                ServerSummary(
                    name=str(record.get("name") or parts[1]),
                    runtime=record.get("runtime"),
                    argv=[str(a) for a in record.get("argv") or []],
                    image=record.get("image"),
                    image_id=record.get("image_id"),
                    image_digests=digests,
                    identity=summary_identity(record),
                )
            )
    return servers


def _hardware(files: Mapping[str, bytes]) -> dict[str, Any]:
    if "env.json" not in files:
        return {}
    env = json.loads(files["env.json"])
    return {key: env[key] for key in _HARDWARE_KEYS if key in env} if isinstance(env, dict) else {}


def _claims(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    if CLAIMS_NAME not in files:
        return []
    try:
        parsed = ClaimsFile.model_validate(yaml.safe_load(files[CLAIMS_NAME]))
    except (yaml.YAMLError, ValidationError) as err:
        raise UsageError(f"{CLAIMS_NAME} in the run directory is not a valid claims file: {err}") from None
    return [claim.model_dump(mode="json", exclude_none=True) for claim in parsed.claims]


def build_statement(
    files: Mapping[str, bytes],
    *,
    compressed: list[str] | None = None,
    subject: BundleSubject | None = None,
    report_format: int | None = None,
) -> Statement:
    """The statement for a bundle whose files (path -> bytes, manifest and signature excluded) are given.

    ``subject``: what the bundle is for (``pack --for``); it is the packer's to state, not derived from the files.
    ``report_format``: the format report.md is written in; by default read from report.md's marker
    (a report.md without one is format 1). Verify's report check holds report.md to it.
    """
    if report_format is None and "report.md" in files:
        try:
            report_format = marker_format(files["report.md"].decode("utf-8", "replace")) or 1
        except CheckFailed:
            report_format = None  # a malformed marker: verify's report check says so
    if "plan.yaml" not in files:
        raise UsageError("the run directory has no plan.yaml, so it cannot be sealed into a bundle")
    plan = yaml.safe_load(files["plan.yaml"]) or {}
    predicate = BundlePredicate(
        tool=Tool(version=__version__),
        plan_name=str(plan.get("name", "")) if isinstance(plan, dict) else "",
        plan_sha256=sha256_hex(files["plan.yaml"]),
        servers=_server_summaries(files),
        hardware=_hardware(files),
        claims=_claims(files),
        compressed=sorted(compressed or []),
        subject=subject,
        report_format=report_format,
    )
    subjects = [Subject(name=path, digest={"sha256": sha256_hex(data)}) for path, data in sorted(files.items())]
    return Statement(subject=subjects, predicate=predicate)


def statement_bytes(statement: Statement) -> bytes:
    doc = statement.model_dump(mode="json", by_alias=True)
    if doc["predicate"].get("subject") is None:
        doc["predicate"].pop("subject", None)  # manifests without a subject keep the bytes they always had
    for server in doc["predicate"]["servers"]:
        if server.get("identity") is None:
            server.pop("identity", None)  # servers that recorded no identity keep the bytes they had
    if doc["predicate"].get("report_format") is None:
        doc["predicate"].pop("report_format", None)  # and so do those that predate the declared report format
    return canonical_json(doc, label="manifest")


def parse_statement(data: bytes) -> Statement:
    """Parse a manifest; it must be bounded JSON (byog.bundles.bounds), match the schema and be in canonical form."""
    raw = load_json(data, MANIFEST_NAME)
    try:
        statement = Statement.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise CheckFailed(f"{MANIFEST_NAME} is not a valid byog statement at '{where}': {first['msg']}") from None
    if canonical_json(raw, label="manifest") != data:
        raise CheckFailed(f"{MANIFEST_NAME} is not in RFC 8785 canonical form")
    return statement
