"""Plan: the bundle ran the plan file the maintainer names (``verify --plan PATH``, the file of the PR's tree).

The run pinned its plan file by digest before it started (plan-pin.json, signed with the rest);
``byog.plans.pin`` holds a given file to that pin and re-derives plan.yaml from it. Without
``--plan`` the pin is only held to plan.yaml.
"""

from __future__ import annotations

from byog.bundles.bounds import load_yaml
from byog.bundles.checks.base import Skipped, VerifyContext, check
from byog.core.errors import CheckFailed
from byog.plans.pin import hold_to_pin, pins_plan_yaml
from byog.schemas.plan_pin import PLAN_PIN_NAME, PlanPin


@check("plan", requires=("schemas",))
def ran_the_given_plan(ctx: VerifyContext) -> str:
    if not ctx.has(PLAN_PIN_NAME):
        if ctx.plan_given is not None:
            raise CheckFailed(
                f"the bundle pins no plan ({PLAN_PIN_NAME} is absent), so it cannot show it ran {ctx.plan_label}"
            )
        raise Skipped(f"the bundle pins no plan ({PLAN_PIN_NAME} is absent) and no --plan was given")
    pin = PlanPin.model_validate(ctx.parsed[PLAN_PIN_NAME])  # the schemas check validated it
    plan_yaml = ctx.read("plan.yaml")
    if ctx.plan_given is None:
        pins_plan_yaml(pin, plan_yaml)
        raise Skipped(f"pinned plan sha256 {pin.file_sha256[:16]}… (tier {pin.tier}); no --plan given to hold it to")
    given_doc = load_yaml(ctx.plan_given, ctx.plan_label, ctx.caps)
    return hold_to_pin(pin, plan_yaml, ctx.parsed["plan.yaml"], ctx.plan_given, given_doc, ctx.plan_label)
