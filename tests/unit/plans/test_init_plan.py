"""The plan byog init writes: the isolation plan of a switch on a PR build, TP choices that fit, and a CPU plan
that is the smoke profile in everything a run measures."""

from __future__ import annotations

from byog.plans import init_plan as ip
from byog.plans.load import load_plan, parse_plan

GIB = 2**30


def _answers(**over: object) -> ip.InitAnswers:
    fields: dict[str, object] = {
        "name": "t",
        "model": "org/model",
        "candidate": ip.Build("python", "/venvs/pr/bin/python"),
        "baseline": ip.Baseline(ip.Build("python", "/venvs/base/bin/python"), "stock at the merge base"),
        "gpus": ip.Gpus(1, "NVIDIA H100 80GB HBM3", 80 * GIB),
        "tp": 1,
        "tp_why": "fits",
        "batch_sizes": ip.GPU_BATCHES,
    }
    fields.update(over)
    return ip.InitAnswers(**fields)  # type: ignore[arg-type]


def test_a_switch_on_a_pr_build_plans_three_servers_and_the_isolation_pair() -> None:
    plan = parse_plan(ip.plan_yaml(_answers(switch={"decode_backend": "latency_specialized"})), "init")
    assert set(plan.servers) == {"switch-on", "switch-off", "merge-base"}
    assert plan.servers["switch-on"].additional_config == {"decode_backend": "latency_specialized"}
    assert plan.servers["switch-off"].additional_config is None
    pairs = {(p.candidate, p.baseline): p for p in plan.comparison_pairs}
    assert set(pairs) == {("switch-on", "switch-off"), ("merge-base", "switch-off")}
    assert pairs[("merge-base", "switch-off")].isolation and not pairs[("switch-on", "switch-off")].isolation
    assert pairs[("switch-on", "switch-off")].differs_in == ["additional_config.decode_backend"]
    assert plan.numerics is not None  # the greedy-output differential of both pairs


def test_a_switch_on_the_installed_build_is_a_plain_pair() -> None:
    plan = parse_plan(ip.plan_yaml(_answers(candidate=ip.Build("installed"), switch={"x": 1})), "init")
    assert set(plan.servers) == {"candidate", "baseline"} and plan.numerics is None


def test_tp_choices_leave_kv_room_and_divide_the_heads() -> None:
    h100x8 = ip.Gpus(8, "H100", 80 * GIB)
    # 140 GiB of weights (a 70B model in bf16): TP1 cannot hold them, TP2 leaves 70 GiB per GPU > 75% of 72 GiB
    assert ip.tp_choices(140 * GIB, h100x8, 64, None, 1001, 64) == [4, 8]
    assert ip.tp_choices(16 * GIB, h100x8, 32, None, 1001, 64) == [1, 2, 4, 8]
    assert ip.tp_choices(16 * GIB, h100x8, 12, None, 1001, 64) == [1, 2, 4]  # 12 heads: TP8 does not divide
    assert ip.tp_choices(None, h100x8, None, None, 1001, 64) == [1, 2, 4, 8]  # nothing to judge with


def test_the_cpu_plan_is_the_smoke_profile_in_everything_a_run_measures() -> None:
    """The guide's CPU walkthrough (docs/contributing.md) runs this plan; the suite's one smoke run
    (tests/integration/test_e2e_run.py) runs the smoke profile: equal here, so that run serves both."""
    cpu = _answers(
        model="builtin:smollm2-135m-instruct",
        candidate=ip.Build("installed"),
        baseline=ip.Baseline(ip.Build("installed"), "eager", stock=False, args=["--enforce-eager"]),
        gpus=ip.Gpus(0),
        batch_sizes=ip.CPU_BATCHES,
        isl=ip.CPU_ISL,
        osl=ip.CPU_OSL,
        max_model_len=4096,
    )
    written = parse_plan(ip.plan_yaml(cpu), "init")
    smoke, _ = load_plan("smoke")
    measured = (
        "model",
        "servers",
        "baseline",
        "pairs",
        "workloads",
        "evals",
        "seeds",
        "launches",
        "aa_pair",
        "numerics",
    )
    assert written.model_dump(include=set(measured)) == smoke.model_dump(include=set(measured))


def test_a_cpu_server_that_names_its_dtype_runs_with_it_named_once() -> None:
    """A CPU plan's servers run float32 (init_plan.CPU_SERVER_ARGS) unless their own args name a dtype:
    then theirs is the one, in either spelling, and the command line carries --dtype once."""
    for flag in (["--dtype", "bfloat16"], ["--dtype=bfloat16"]):
        cpu = _answers(
            model="builtin:smollm2-135m-instruct",
            candidate=ip.Build("flags", "--enforce-eager"),
            baseline=ip.Baseline(ip.Build("installed"), "bf16", stock=False, args=flag),
            gpus=ip.Gpus(0),
            batch_sizes=ip.CPU_BATCHES,
        )
        plan = parse_plan(ip.plan_yaml(cpu), "init")
        assert plan.servers["baseline"].args == flag
        assert plan.servers["candidate"].args == [*ip.CPU_SERVER_ARGS, "--enforce-eager"]


def test_a_wheel_candidate_is_an_image_still_to_build_with_the_command_in_its_comment() -> None:
    text = ip.plan_yaml(_answers(candidate=ip.Build("wheel", "dist/vllm-0.33.0.dev1-cp38-abi3-linux_x86_64.whl")))
    plan = parse_plan(text, "init")
    image = plan.servers["candidate"].image_ref() or ""
    assert image.startswith("<SET-ME:") and "dist/vllm-0.33.0.dev1" in image
    assert "# the wheel layered over the stock eval image: byog image build --vllm-wheel dist/vllm-0.33.0.dev1" in text
