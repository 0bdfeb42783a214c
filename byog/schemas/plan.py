"""plan.yaml: the Plan model lives in ``byog.plans.model``; this module only registers it."""

from __future__ import annotations

from byog.plans.model import PLAN_SCHEMA_VERSION, Plan
from byog.schemas.registry import register

register("plan", Plan, version=PLAN_SCHEMA_VERSION, files=("plan.yaml",), kind="yaml")
