"""claims.yaml: the numbers a PR states, which ``byog verify --claims`` holds a bundle against.

    schema_version: 1
    claims:
      - name: TP16 b1 decode tok/s            # a label shown in verify's output
        server: candidate
        select: {tensor_parallel_size: 16, batch_size: 1}   # or point: <point id>
        metric: decode_tok_s
        value: 842
        tolerance: 0.05                         # relative; default 0.05
      - kind: ratio                             # candidate / baseline at the same point
        candidate: candidate
        baseline: baseline
        select: {batch_size: 1}
        metric: decode_tok_s
        value: 1.73
      - kind: verdict
        task: gsm8k
        candidate: candidate
        verdict: equivalent
        note: where the figure was published      # optional, shown, never checked
        not_checked: byog traces no kernels       # optional: listed as not checked instead of failing

A selector's keys are matched against a summary point's fields (and its ``spec``/``workload``);
it must match exactly one point of the server.

Two optional keys on every claim carry what a bare number cannot: ``note`` (the context the
published figure comes with, e.g. "baseline on 8 GPUs, candidate on 16"; shown, never checked)
and ``not_checked`` (why no bundle can check the claim yet, e.g. byog does not
measure its metric): verify lists such a claim as not checked, never as holding.

Numbers must be finite (``.nan`` and ``.inf`` are refused anywhere in a claim, selectors
included), a tolerance is at most 1 (100%: a wider one accepts anything of the same sign, which
claims nothing), and a selector names at least one field.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, model_validator

from byog.schemas.base import Strict
from byog.schemas.registry import register

CLAIMS_SCHEMA_VERSION: Final = 1
DEFAULT_TOLERANCE = 0.05
MAX_TOLERANCE = 1.0


class FiniteStrict(Strict):
    """A strict record whose numbers must be finite (NaN and infinities refused)."""

    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)


def non_finite_in(value: Any, path: str) -> str | None:
    """The path of the first NaN or infinity inside a selector value, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, dict):
        for key, item in value.items():
            found = non_finite_in(item, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = non_finite_in(item, f"{path}[{index}]")
            if found:
                return found
    return None


class _ClaimBase(FiniteStrict):
    name: str | None = None
    note: str | None = None  # the published context of the number (a caveat, its source); shown, not checked
    not_checked: str | None = None  # why no bundle can check this claim yet; verify lists it, never passes it


class _PointClaim(_ClaimBase):
    point: str | None = Field(default=None, min_length=1)  # a point id, as in summary.json
    select: dict[str, Any] | None = Field(default=None, min_length=1)  # or fields that pick exactly one point
    metric: str = Field(min_length=1)  # a field of the point, dotted for nested values (e.g. tpot_s.p50)
    value: float
    tolerance: float = Field(
        default=DEFAULT_TOLERANCE, ge=0, le=MAX_TOLERANCE
    )  # relative: |got - value| <= tolerance * |value|

    @model_validator(mode="after")
    def _one_way_to_pick(self) -> _PointClaim:
        if (self.point is None) == (self.select is None):
            raise ValueError("a claim names its point with exactly one of 'point' or 'select'")
        bad = non_finite_in(self.select, "select")
        if bad:
            raise ValueError(f"{bad} is not a finite number")
        return self


class ValueClaim(_PointClaim):
    kind: Literal["value"] = "value"
    server: str


class RatioClaim(_PointClaim):
    kind: Literal["ratio"]
    candidate: str
    baseline: str


class VerdictClaim(_ClaimBase):
    kind: Literal["verdict"]
    task: str
    candidate: str
    verdict: Literal["equivalent", "different", "inconclusive"]


def _claim_kind(value: Any) -> str:
    """'kind' picks the claim type; a claim without one is a plain value claim."""
    if isinstance(value, dict):
        return str(value.get("kind", "value"))
    return str(getattr(value, "kind", "value"))


Claim = Annotated[
    Annotated[ValueClaim, Tag("value")] | Annotated[RatioClaim, Tag("ratio")] | Annotated[VerdictClaim, Tag("verdict")],
    Discriminator(_claim_kind),
]


class ClaimsFile(FiniteStrict):
    schema_version: Literal[1] = CLAIMS_SCHEMA_VERSION
    claims: list[Claim] = Field(min_length=1)


register("claims", ClaimsFile, version=CLAIMS_SCHEMA_VERSION, files=("claims.yaml",), kind="yaml")
