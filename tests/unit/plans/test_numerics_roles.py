"""Each baseline's sensitivity control and envelope variant: derived, reused, or refused."""

from __future__ import annotations

import pytest

from byog.core.errors import UsageError
from byog.plans.load import parse_plan
from byog.plans.numerics_roles import (
    check_stock_roles,
    derived_servers,
    launch_config,
    parsed_args,
    stock_roles,
)

BASE = """\
name: roles
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  stock: {args: [--dtype, bfloat16], env: {A: "1"}}
  eager: {args: [--enforce-eager, --dtype, bfloat16], env: {A: "1"}}
  fp16: {args: [--dtype, float16], env: {A: "1"}}
baseline: stock
"""


def _plan(numerics: str = "{}"):
    return parse_plan(BASE + f"numerics: {numerics}\n", "plan")


def test_parsed_args_last_value_wins_and_bare_flags_map_to_none() -> None:
    assert parsed_args(["--dtype", "float32", "--enforce-eager", "--dtype=bfloat16", "-x"]) == {
        "--dtype": "bfloat16",
        "--enforce-eager": None,
        "#0": "-x",
    }


def test_the_default_control_is_the_plans_fp16_server_and_eager_is_refused_as_the_variant() -> None:
    plan = _plan()
    # --dtype float16 appended to stock's launch is exactly the plan's fp16 server: reused, launched once
    assert stock_roles(plan)["stock"].control == "fp16"
    # the default envelope variant (--enforce-eager) is the candidate 'eager': never judged against itself
    assert stock_roles(plan)["stock"].variant is None
    with pytest.raises(UsageError, match="is the candidate 'eager' itself"):
        check_stock_roles(plan)


def test_a_variant_of_its_own_is_derived_with_the_baselines_env() -> None:
    plan = _plan("{envelope_variant: {args: [--max-num-batched-tokens, '256'], env: {B: '2'}}}")
    check_stock_roles(plan)
    assert stock_roles(plan)["stock"].variant == "stock.variant"
    config = launch_config(plan, "stock.variant")
    assert config.args == ["--dtype", "bfloat16", "--max-num-batched-tokens", "256"]
    assert config.env == {"A": "1", "B": "2"}
    assert list(derived_servers(plan)) == ["stock.variant"]


def test_a_change_that_leaves_the_baseline_as_it_is_is_refused() -> None:
    plan = _plan("{control: {args: [--dtype, bfloat16]}, envelope_variant: {args: [--max-num-seqs, '8']}}")
    with pytest.raises(UsageError, match=r"numerics.control \(--dtype bfloat16\) leaves the baseline 'stock' as it is"):
        check_stock_roles(plan)
    assert stock_roles(plan)["stock"].control is None


def test_a_server_named_like_a_derivative_is_refused() -> None:
    plan = parse_plan(
        BASE.replace("baseline: stock", "  stock.variant: {args: [--seed, '1']}\nbaseline: stock")
        + "numerics: {envelope_variant: {args: [--max-num-seqs, '8']}}\n",
        "plan",
    )
    with pytest.raises(UsageError, match="a server is named 'stock.variant'"):
        check_stock_roles(plan)


def test_no_numerics_section_no_roles() -> None:
    plan = parse_plan(BASE, "plan")
    assert stock_roles(plan) == {} and derived_servers(plan) == {}
    with pytest.raises(UsageError, match="neither a server of the plan"):
        launch_config(plan, "stock.control")


def test_an_endpoint_baseline_gets_no_derived_control_or_variant_and_says_why() -> None:
    plan = parse_plan(
        "name: endpoints\nmodel: {path: 'builtin:smollm2-135m-instruct'}\n"
        "servers:\n  cand: {runtime: endpoint, url: 'http://127.0.0.1:1'}\n"
        "  stock: {runtime: endpoint, url: 'http://127.0.0.1:2'}\nbaseline: stock\nnumerics: {}\n",
        "plan",
    )
    check_stock_roles(plan)  # an endpoint plan is not bad input: it just cannot show sensitivity
    role = stock_roles(plan)["stock"]
    assert (role.control, role.variant) == (None, None)
    assert derived_servers(plan) == {}  # a copy of the endpoint's URL would be the baseline again
    assert role.not_derived is not None and "'stock' is an endpoint byog did not launch" in role.not_derived
    assert "--dtype float16" in role.not_derived and "--enforce-eager" in role.not_derived
