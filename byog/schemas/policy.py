"""policy.yaml: what a maintainer requires of every bundle, checked by ``byog verify --policy``.

    schema_version: 1
    allowed_image_digests: ["sha256:..."]   # every docker server must run one of these
    required_points: [{server: candidate, point: decode-b1}, {server: baseline, select: {batch_size: 1}}]
    required_tasks: [gsm8k]                 # each must have a verdict for every candidate
    min_samples: {requests: 3, eval_items: 20}
    require_valid_points: true              # no point flagged invalid
    forbid_degenerate: true                 # no eval verdict is degenerate (floor, ceiling, ...)
    forbid_screening: true                  # no eval verdict comes from an unsound (screening) design
    pairs_may_differ_in: [additional_config.decode_backend, code]   # launch facts a pair may differ in
    stock: {vllm_versions: ["0.11.0"], commits: [...], image_digests: ["sha256:..."]}  # what a baseline runs
    require_bound_candidates: true          # under --for ...#N@SHA a released candidate (no commit) fails
    forbid_engine_patches: true             # every server's vLLM matches its RECORD, no foreign start-up hook
    model_signers: [{name: publisher, public_key: "-----BEGIN PUBLIC KEY-----..."}]  # OMS model.sig keys/certs
    require_model_signature: true           # both sides of each pair: a valid model.sig by the same signer
    engine_patch_waivers: {vllm/x.py: <sha256>}   # patched files (or hook paths) allowed, by their digest

A policy must require something (an empty one would pass every bundle), numbers are finite, and
selectors name at least one field. verify fails a requirement that a bundle would meet only
vacuously (required tasks but no candidate, sample minimums but no points or evals).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, NonNegativeInt, model_validator

from byog.schemas.claims import FiniteStrict, non_finite_in
from byog.schemas.registry import register

POLICY_SCHEMA_VERSION: Final = 1


class RequiredPoint(FiniteStrict):
    server: str = Field(min_length=1)
    point: str | None = Field(default=None, min_length=1)
    select: dict[str, Any] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_way_to_pick(self) -> RequiredPoint:
        if (self.point is None) == (self.select is None):
            raise ValueError("a required point is named with exactly one of 'point' or 'select'")
        bad = non_finite_in(self.select, "select")
        if bad:
            raise ValueError(f"{bad} is not a finite number")
        return self


class MinSamples(FiniteStrict):
    requests: NonNegativeInt = 0  # measured requests per bench point
    eval_items: NonNegativeInt = 0  # items per eval task and server


class Stock(FiniteStrict):
    """What a stock baseline runs; each list left out allows anything, and a given one must match."""

    vllm_versions: list[Annotated[str, Field(min_length=1)]] | None = None
    commits: list[Annotated[str, Field(pattern=r"^[0-9a-fA-F]{7,40}$")]] | None = None  # prefixes match
    image_digests: list[Annotated[str, Field(min_length=1)]] | None = None  # "sha256:..." or "repo@sha256:..."

    @model_validator(mode="after")
    def _says_something(self) -> Stock:
        if self.vllm_versions is None and self.commits is None and self.image_digests is None:
            raise ValueError("'stock' names no vllm_versions, commits or image_digests")
        return self


class ModelSigner(FiniteStrict):
    """A publisher whose OMS signature (model.sig) verify accepts: a PEM public key or CA certificate."""

    name: str = Field(min_length=1)
    public_key: str | None = Field(default=None, min_length=1, max_length=16384)  # PEM: an EC key's signature
    certificate: str | None = Field(default=None, min_length=1, max_length=65536)  # PEM chain: a certificate's

    @model_validator(mode="after")
    def _one_material(self) -> ModelSigner:
        if (self.public_key is None) == (self.certificate is None):
            raise ValueError(f"model signer '{self.name}' needs exactly one of public_key or certificate")
        return self


class Policy(FiniteStrict):
    schema_version: Literal[1] = POLICY_SCHEMA_VERSION
    allowed_image_digests: list[str] | None = None  # None: any image; []: no docker images at all
    required_points: list[RequiredPoint] = []
    required_tasks: list[Annotated[str, Field(min_length=1)]] = []
    min_samples: MinSamples = Field(default_factory=MinSamples)
    require_valid_points: bool = False
    forbid_degenerate: bool = False  # docs/statistics.md §5
    forbid_screening: bool = False  # docs/statistics.md §3
    # launch facts a pair may differ in (byog.analysis.launch_diff names them); None: not checked
    pairs_may_differ_in: list[Annotated[str, Field(min_length=1)]] | None = None
    stock: Stock | None = None
    require_bound_candidates: bool = False
    forbid_engine_patches: bool = False  # every vLLM matches its RECORD, no foreign start-up hook; unknown fails
    model_signers: list[ModelSigner] = []  # keys or certificates a model.sig is verified with, offline
    require_model_signature: bool = False  # each pair's weights carry a valid signature by the same signer
    # a patch the maintainer accepts: RECORD path (or a hook's path) -> the patched file's sha256
    engine_patch_waivers: dict[
        Annotated[str, Field(min_length=1)], Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    ] = {}

    @model_validator(mode="after")
    def _requires_something(self) -> Policy:
        if self.engine_patch_waivers and not self.forbid_engine_patches:
            raise ValueError("engine_patch_waivers waive nothing without forbid_engine_patches: true")
        if self.require_model_signature and not self.model_signers:
            raise ValueError("require_model_signature needs model_signers to verify signatures with")
        if (
            self.allowed_image_digests is None
            and not self.required_points
            and not self.required_tasks
            and not self.min_samples.requests
            and not self.min_samples.eval_items
            and not self.require_valid_points
            and not self.forbid_degenerate
            and not self.forbid_screening
            and self.pairs_may_differ_in is None
            and self.stock is None
            and not self.require_bound_candidates
            and not self.forbid_engine_patches
            and not self.require_model_signature
        ):
            raise ValueError("the policy requires nothing, so every bundle would meet it")
        return self


register("policy", Policy, version=POLICY_SCHEMA_VERSION)
