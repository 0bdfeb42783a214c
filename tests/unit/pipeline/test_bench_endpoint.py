"""`byog bench`'s flags become the plan the sweep runs: the closed loop's warm-up prompts."""

from __future__ import annotations

from byog.pipeline.bench_endpoint import BenchFlags, _plan_from_flags


def test_warmup_prompts_reach_the_closed_loop_workload() -> None:
    flags = BenchFlags(
        endpoint="http://127.0.0.1:8000", workload="concurrency", concurrencies=[8], num_prompts=32, warmup_prompts=8
    )
    plan, text = _plan_from_flags(flags, "m")
    (workload,) = plan.workloads
    assert (workload.kind, workload.warmup_prompts, workload.num_prompts) == ("concurrency", 8, 32)
    assert "warmup_prompts: 8" in text  # the plan.yaml the run directory keeps says so too


def test_without_the_flag_nothing_is_warmed_up() -> None:
    plan, _ = _plan_from_flags(BenchFlags(endpoint="http://127.0.0.1:8000", workload="concurrency"), "m")
    assert plan.workloads[0].warmup_prompts == 0
