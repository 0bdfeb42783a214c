"""manifest.intoto.json: an in-toto Statement v1 whose predicate describes a byog bundle.

https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md: ``_type``, ``subject``
(one entry per file: its path and sha256), ``predicateType``, ``predicate``. The statement is
written as RFC 8785 canonical JSON (``byog.bundles.manifest``), so its bytes are what is signed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from byog.schemas.registry import register

MANIFEST_SCHEMA_VERSION = 1
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://byog.dev/bundle/v1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Digest(_Strict):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Subject(_Strict):
    name: str = Field(min_length=1)  # the file's path inside the bundle, '/'-separated
    digest: Digest


class Tool(_Strict):
    name: Literal["byog"] = "byog"
    version: str


class ServerSummary(_Strict):
    name: str
    runtime: str | None = None
    argv: list[str] = []
    image: str | None = None
    image_id: str | None = None
    image_digests: list[str] = []  # RepoDigests, e.g. "vllm/vllm-openai@sha256:..."


class BundlePredicate(_Strict):
    schema_version: int = MANIFEST_SCHEMA_VERSION
    tool: Tool
    plan_name: str
    plan_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")  # sha256 of plan.yaml's bytes
    servers: list[ServerSummary]
    hardware: dict[str, Any] = {}  # from env.json: cpu, memory, gpus
    claims: list[dict[str, Any]] = []  # the run's claims.yaml, if it had one (see byog.bundles.claims)
    compressed: list[str] = []  # bundle paths that pack compressed to fit the size budget


class Statement(_Strict):
    type_: Literal["https://in-toto.io/Statement/v1"] = Field(default=STATEMENT_TYPE, alias="_type")
    subject: list[Subject] = Field(min_length=1)
    predicateType: Literal["https://byog.dev/bundle/v1"] = PREDICATE_TYPE
    predicate: BundlePredicate


register("manifest", Statement, version=MANIFEST_SCHEMA_VERSION, files=("manifest.intoto.json",))


class SignerRecord(_Strict):
    """signer.json: the key the contributor signed with, so report.md can name it (verify checks it)."""

    schema_version: int = MANIFEST_SCHEMA_VERSION
    fingerprint: str = Field(pattern=r"^SHA256:[A-Za-z0-9+/]+={0,2}$")
    public_key: str
    source: str  # where the key came from: $BYOG_SIGNING_KEY, ~/.config/byog/config, git config


register("signer", SignerRecord, version=MANIFEST_SCHEMA_VERSION, files=("signer.json",))
