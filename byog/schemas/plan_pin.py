"""plan-pin.json: the plan a run started from, pinned by digest before anything ran.

A PR's plan file can be edited after the numbers are known; the pin lets ``byog verify --plan
PATH`` hold the bundle to the plan file in the PR's tree (``byog.plans.pin``).
"""

from __future__ import annotations

from pydantic import Field

from byog.schemas.base import Strict
from byog.schemas.registry import register

PLAN_PIN_SCHEMA_VERSION = 1
PLAN_PIN_NAME = "plan-pin.json"

_SHA256 = r"^[0-9a-f]{64}$"


class PlanPin(Strict):
    schema_version: int = PLAN_PIN_SCHEMA_VERSION
    source: str = Field(max_length=512)  # the plan file's path as given, or "built-in profile 'smoke'"
    file_sha256: str = Field(pattern=_SHA256)  # the plan file's bytes as given
    canonical_sha256: str = Field(pattern=_SHA256)  # RFC 8785 JSON of the file's YAML: blind to comments and layout
    tier: str = Field(max_length=64)  # the tier the run cut the plan to ("full": plan.yaml is the file verbatim)
    plan_yaml_sha256: str = Field(pattern=_SHA256)  # the run directory's plan.yaml, as the run recorded it


register("plan_pin", PlanPin, version=PLAN_PIN_SCHEMA_VERSION, files=(PLAN_PIN_NAME,))
