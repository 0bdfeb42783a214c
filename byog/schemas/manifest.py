"""manifest.intoto.json: an in-toto Statement v1 whose predicate describes a byog bundle.

https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md: ``_type``, ``subject``
(one entry per file: its path and sha256), ``predicateType``, ``predicate``. The statement is
written as RFC 8785 canonical JSON (``byog.bundles.manifest``), so its bytes are what is signed.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from byog.core.errors import UsageError
from byog.schemas.commits import COMMIT_PATTERN, same_commit
from byog.schemas.registry import register

MANIFEST_SCHEMA_VERSION: Final = 1
STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE: Final = "https://byog.dev/bundle/v1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


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
    # server.json's identity (code, weights and tokenizer digests, image; per node for a multi-node
    # server) without the per-file hashes; absent from manifests of servers that recorded none
    identity: dict[str, Any] | None = None


_SUBJECT = re.compile(
    r"^(?P<repo>[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100})"
    r"(?:#(?P<pr>[0-9]{1,9})(?:@(?P<head>[0-9a-fA-F]{7,40}))?|@(?P<commit>[0-9a-fA-F]{7,40}))$"
)


class BundleSubject(_Strict):
    """What a bundle is for, signed with it: a repository and a pull request number or a commit.

    ``verify --for OWNER/REPO#N`` (or ``OWNER/REPO@COMMIT``) fails a bundle whose subject is
    anything else, so a bundle made for one PR cannot be replayed on another. Repository names
    compare case-insensitively (GitHub's); commits compare by ``byog.schemas.commits.same_commit``.
    ``OWNER/REPO#N@SHA`` names a PR and its head: the subject check holds the PR number, and
    verify's commit check holds the candidates' measured commit (server.json) to the head;
    ``OWNER/REPO@COMMIT`` is held both ways too (the signed subject, and the measured commit).
    ``byog run --for OWNER/REPO#N`` records the candidates' commit beside the number.
    """

    repository: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
    pr: int | None = Field(default=None, ge=1)
    commit: str | None = Field(default=None, pattern=COMMIT_PATTERN)

    @model_validator(mode="after")
    def _names_something(self) -> BundleSubject:
        if self.pr is None and self.commit is None:
            raise ValueError("a subject names a pull request number or a commit")
        return self

    @classmethod
    def parse(cls, text: str) -> BundleSubject:
        """'OWNER/REPO#N', 'OWNER/REPO#N@SHA' or 'OWNER/REPO@COMMIT'; ValueError otherwise."""
        found = _SUBJECT.fullmatch(text)
        if not found:
            raise ValueError(f"'{text}' is not OWNER/REPO#PR, OWNER/REPO#PR@SHA or OWNER/REPO@COMMIT")
        pr = found.group("pr")
        commit = found.group("commit") or found.group("head")
        return cls(
            repository=found.group("repo"), pr=int(pr) if pr else None, commit=commit.lower() if commit else None
        )

    def label(self) -> str:
        if self.pr is None:
            return f"{self.repository}@{self.commit}"
        return f"{self.repository}#{self.pr}" + (f"@{self.commit}" if self.commit else "")

    def mismatch(self, wanted: BundleSubject) -> str | None:
        """Why this (the bundle's) subject is not ``wanted``, or None when it is."""
        if self.repository.lower() != wanted.repository.lower():
            return f"the bundle is for {self.label()}, not {wanted.repository}"
        if wanted.pr is not None and self.pr != wanted.pr:
            return f"the bundle is for {self.label()}, not pull request #{wanted.pr}"
        # a PR's head: the commit check holds it
        if wanted.commit is not None and wanted.pr is None and not same_commit(self.commit, wanted.commit):
            return f"the bundle is for {self.label()}, not commit {wanted.commit}"
        return None


class BundlePredicate(_Strict):
    schema_version: int = MANIFEST_SCHEMA_VERSION
    tool: Tool
    plan_name: str
    plan_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")  # sha256 of plan.yaml's bytes
    servers: list[ServerSummary]
    hardware: dict[str, Any] = {}  # from env.json: cpu, memory, gpus
    claims: list[dict[str, Any]] = []  # the run's claims.yaml, if it had one (see byog.bundles.claims)
    compressed: list[str] = []  # bundle paths that pack compressed to fit the size budget
    subject: BundleSubject | None = None  # what the bundle is for (pack --for); absent from manifests without one
    # The format report.md is written in (byog.report.versions); absent from manifests packed before it was declared.
    report_format: int | None = Field(default=None, ge=1)


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


def subject_arg(value: str | BundleSubject | None) -> BundleSubject | None:
    """``--for OWNER/REPO#PR`` (``#PR@SHA``, or ``@COMMIT``) as given on a command line or already parsed."""
    if value is None or isinstance(value, BundleSubject):
        return value
    try:
        return BundleSubject.parse(value)
    except ValueError as err:
        raise UsageError(f"--for: {err}") from None
