"""``byog plan``'s numerics part: each baseline's control and envelope variant, and what they add."""

from __future__ import annotations

from pathlib import Path

from byog.pipeline.planview import numerics_cost
from byog.pipeline.startup_estimate import OTHER_GUESS_S
from byog.plans.load import parse_plan

PLAN = """\
name: cost
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  stock: {args: [--enforce-eager]}
  fp16: {args: [--enforce-eager, --dtype, float16]}
  compiled: {}
baseline: stock
numerics: {envelope_variant: {args: [--max-num-batched-tokens, "256"]}}
"""


def test_the_control_reuses_a_plan_server_and_the_variant_costs_one_start(tmp_path: Path) -> None:
    rows = numerics_cost(parse_plan(PLAN, "plan"))
    control, variant = rows
    assert (control["role"], control["server"], control["extra_launch"]) == ("control", "fp16", False)
    assert control["startup_s"] == 0 and control["command"] is None
    assert (variant["role"], variant["server"], variant["extra_launch"]) == ("envelope variant", "stock.variant", True)
    # an eager stock (no compile, no capture) of a model whose weights are not a folder here: the rest only
    assert variant["startup_s"] == OTHER_GUESS_S and variant["pass_s"] is None
    assert variant["command"].endswith("--enforce-eager --max-num-batched-tokens 256")


def test_no_numerics_section_costs_nothing() -> None:
    assert numerics_cost(parse_plan(PLAN.split("numerics:")[0], "plan")) == []
