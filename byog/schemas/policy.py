"""policy.yaml: what a maintainer requires of every bundle, checked by ``byog verify --policy``.

    schema_version: 1
    allowed_image_digests: ["sha256:..."]   # every docker server must run one of these
    required_points: [{server: candidate, point: decode-b1}, {server: baseline, select: {batch_size: 1}}]
    required_tasks: [gsm8k]                 # each must have a verdict for every candidate
    min_samples: {requests: 3, eval_items: 20}
    require_valid_points: true              # no point flagged invalid
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, model_validator

from byog.schemas.registry import register

POLICY_SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RequiredPoint(_Strict):
    server: str
    point: str | None = None
    select: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_way_to_pick(self) -> "RequiredPoint":
        if (self.point is None) == (self.select is None):
            raise ValueError("a required point is named with exactly one of 'point' or 'select'")
        return self


class MinSamples(_Strict):
    requests: NonNegativeInt = 0  # measured requests per bench point
    eval_items: NonNegativeInt = 0  # items per eval task and server


class Policy(_Strict):
    schema_version: Literal[1] = POLICY_SCHEMA_VERSION
    allowed_image_digests: list[str] | None = None  # None: any image; []: no docker images at all
    required_points: list[RequiredPoint] = []
    required_tasks: list[str] = []
    min_samples: MinSamples = Field(default_factory=MinSamples)
    require_valid_points: bool = False


register("policy", Policy, version=POLICY_SCHEMA_VERSION)
