"""The built-in GPU profiles validate, encode the published matrix, and `byog plan` works for every tier."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from byog.cli import app
from byog.core.errors import UsageError
from byog.pipeline.planview import tier_estimates
from byog.plans.expand import check_plan_fits, expand_plan
from byog.plans.load import builtin_profiles, load_plan, parse_plan
from byog.plans.tiers import (
    TIERS,
    apply_tier,
    find_placeholders,
    require_no_placeholders,
    tiered_plan_yaml,
)
from byog.schemas.plan import AgenticWorkload

GPU_PROFILES = ("kimi-k3-gb300", "deepseek-v4.1-flash")
SWITCH = {"decode_backend": "latency_specialized"}
# What vLLM's GB200/GB300 multi-node recipes export (docs/profiles.md).
NVL72_ENV = {"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1", "NCCL_NVLS_ENABLE": "1"}


@pytest.mark.parametrize("name", GPU_PROFILES)
def test_profile_validates_and_fits(name: str) -> None:
    assert name in builtin_profiles()
    plan, _ = load_plan(name)
    check_plan_fits(plan)
    for server, config in plan.servers.items():
        assert config.runtime == "slurm" and config.image and "@sha256:" in config.image
        assert config.platform == "linux/arm64" and config.gpus_per_node == 4  # Grace trays of 4 GPUs
        assert config.nodes * 4 == config.tensor_parallel_size  # TP8 = 2 x 4, TP16 = 4 x 4, TP8+DCP8 = 2 x 4
        assert {k: config.env[k] for k in NVL72_ENV} == NVL72_ENV
        # the switch is the plan field, on candidates only
        assert (config.additional_config == SWITCH) == server.startswith("candidate"), server
    for pair in plan.comparison_pairs:
        c, b = plan.servers[pair.candidate], plan.servers[pair.baseline]
        # a pair differs only in the switch (the isolation pair only in the build: its image): same TP, DCP
        # and speculation
        differs = {"additional_config", "image"} if pair.isolation else {"additional_config"}
        assert c.model_dump(exclude=differs) == b.model_dump(exclude=differs)


def test_kimi_matrix_is_the_published_one() -> None:
    plan, _ = load_plan("kimi-k3-gb300")
    tp = {name: (s.tensor_parallel_size, s.decode_context_parallel_size) for name, s in plan.servers.items()}
    assert tp["candidate-tp8"] == (8, 1) and tp["candidate-tp16"] == (16, 1) and tp["candidate-tp8-dcp8"] == (8, 8)
    points = {(p.workload, p.batch_size, p.isl, p.osl): p.servers for p in expand_plan(plan)}
    for b in (1, 2, 4, 8, 16, 32, 64):
        assert set(points[("decode", b, 1, 1000)]) == {
            "candidate-tp8",
            "baseline-tp8",
            "candidate-tp16",
            "baseline-tp16",
            "mergebase-tp8",  # the isolation pair's stock server at the PR's merge base
        }
    isolation = [(p.candidate, p.baseline) for p in plan.comparison_pairs if p.isolation]
    assert isolation == [("mergebase-tp8", "baseline-tp8")]
    assert [k for k in points if k[0] == "spec-decode"] == [("spec-decode", 1, 1, 1000)]
    spec = plan.servers["candidate-tp16-spec-synth"].speculative_config
    assert spec is not None and spec["method"] == "dspark" and spec["num_speculative_tokens"] == 7
    assert spec["rejection_sample_method"] == "synthetic" and spec["synthetic_acceptance_length"] == 6
    assert {k[2] for k in points if k[0] == "longctx-tp8"} == {8192, 32768, 100000}
    assert {k[2] for k in points if k[0] == "longctx-tp16"} == {8192, 32768}
    assert {k[2] for k in points if k[0] == "longctx-dcp8"} == {100000}
    agentic = [w for w in plan.workloads if isinstance(w, AgenticWorkload)]
    assert [(w.name, w.concurrencies, w.servers) for w in agentic] == [
        ("interactivity", [1], ["candidate-tp16", "baseline-tp16", "baseline-tp8"])
    ]
    assert points[("interactivity", None, 0, 0)] == ("candidate-tp16", "baseline-tp16", "baseline-tp8")
    assert {e.task for e in plan.evals} == {"aime25", "gpqa_diamond", "mrcr", "gsm8k"}


@pytest.mark.parametrize("name", GPU_PROFILES)
def test_evals_never_run_on_synthetic_acceptance(name: str) -> None:
    """Synthetic acceptance accepts unchecked draft tokens: its text is not the model's output."""
    plan, _ = load_plan(name)
    for spec in plan.evals:
        for server in plan.servers_for(spec):
            assert (plan.servers[server].speculative_config or {}).get("rejection_sample_method") != "synthetic", (
                spec.task,
                server,
            )
    with_spec = {s for e in plan.evals for s in plan.servers_for(e) if plan.servers[s].speculative}
    without = {s for e in plan.evals for s in plan.servers_for(e) if not plan.servers[s].speculative}
    assert with_spec and without  # evals with and without speculative decoding


def test_deepseek_up_to_64_concurrent_spec_on_and_off() -> None:
    plan, _ = load_plan("deepseek-v4.1-flash")
    serving = [p for p in expand_plan(plan) if p.workload == "serving"]
    assert [p.concurrency for p in serving] == [1, 2, 4, 8, 16, 32, 64]
    assert {plan.servers[s].speculative for s in serving[0].servers} == {True, False}
    beyond = plan.model_copy(update={"workloads": [plan.workloads[1].model_copy(update={"concurrencies": [128]})]})
    with pytest.raises(UsageError, match="concurrency 128"):  # the profile's --max-num-seqs 64
        check_plan_fits(beyond)


@pytest.mark.parametrize("name", [*GPU_PROFILES, "smoke"])
@pytest.mark.parametrize("tier", TIERS)
def test_tier_round_trips_and_fits(name: str, tier: str) -> None:
    plan, _ = load_plan(name)
    cut = apply_tier(plan, tier)
    check_plan_fits(cut)
    assert parse_plan(tiered_plan_yaml(cut), "recorded plan.yaml") == cut


def test_tier_rules_on_kimi() -> None:
    plan, _ = load_plan("kimi-k3-gb300")
    assert apply_tier(plan, "full") == plan
    smoke = apply_tier(plan, "smoke")
    assert sorted(smoke.servers) == ["baseline-tp8", "candidate-tp8"] and smoke.baseline == "baseline-tp8"
    assert smoke.comparisons == [("candidate-tp8", "baseline-tp8")]
    ids = [p.point_id for p in expand_plan(smoke)]
    assert ids == [
        "decode-b1-isl1-osl256",
        "decode-b64-isl1-osl256",
        "longctx-tp8-b1-isl8192-osl256",
        "longctx-tp8-b64-isl8192-osl256",
        "interactivity-c1",
    ]
    # the agentic point runs on the kept server of its own (baseline-tp8), with 2 sessions after 1 warm-up
    (agentic,) = [p for p in expand_plan(smoke) if p.kind == "agentic"]
    assert (agentic.servers, agentic.sessions, agentic.warmup_sessions) == (("baseline-tp8",), 2, 1)
    # every eval still runs, on the kept pair, 10 items x 1 pass
    assert [(e.task, e.limit, e.passes, e.servers) for e in smoke.evals] == [
        (t, 10, 1, ["candidate-tp8", "baseline-tp8"]) for t in ("aime25", "gpqa_diamond", "mrcr", "gsm8k")
    ]
    standard = apply_tier(plan, "standard")
    assert [p.point_id for p in expand_plan(standard)] == [p.point_id for p in expand_plan(plan)]
    assert {(p.warmup_waves, p.waves) for p in expand_plan(standard) if p.kind == "batch"} == {(1, 3)}
    # evals cut only as far as the gate stays sound (docs/statistics.md): only GSM8K can be cut
    # (the flagship's limits name each whole set: its looks are fractions of them)
    assert [(e.task, e.limit, e.passes, e.looks) for e in standard.evals] == [
        ("aime25", 30, 16, [0.5, 0.75, 1.0]),
        ("gpqa_diamond", 198, 10, [0.5, 0.75, 1.0]),
        ("mrcr", 200, 1, None),
        ("gsm8k", 500, 1, [0.5, 0.75, 1.0]),
    ]
    with pytest.raises(UsageError, match="unknown tier 'huge'"):
        apply_tier(plan, "huge")


def test_tier_estimates_shrink() -> None:
    plan, _ = load_plan("kimi-k3-gb300")
    rows = {r["tier"]: r for r in tier_estimates(plan)}
    # + the interactivity point: on its 3 servers in full, on the one kept server in smoke
    assert rows["smoke"]["bench_points"] == 9 and rows["full"]["bench_points"] == 124
    assert rows["smoke"]["gpu_hours"] < rows["standard"]["gpu_hours"] < rows["full"]["gpu_hours"]
    # full evals: 4 servers x (30 x 16 + 198 x 10 + 200 x 1 + 1319 x 1) requests
    assert rows["full"]["eval_requests"] == 4 * (30 * 16 + 198 * 10 + 200 + 1319)
    assert rows["smoke"]["eval_requests"] == 2 * 4 * 10
    # standard: GSM8K cut to 500 items, the rest as written (they cannot be cut and stay sound)
    assert rows["standard"]["eval_requests"] == 4 * (30 * 16 + 198 * 10 + 200 + 500)


def test_placeholders_are_named_and_refused() -> None:
    plan, _ = load_plan("kimi-k3-gb300")
    found = find_placeholders(plan)
    assert found[0].startswith("model.path: <SET-ME:")
    assert any(f.startswith("servers.candidate-tp16-spec.speculative_config.model:") for f in found)
    with pytest.raises(UsageError, match="still has .* value"):
        require_no_placeholders(plan)
    filled = parse_plan(tiered_plan_yaml(plan).replace("<SET-ME:", "set-by-user-").replace(">", ""), "t.yaml")
    require_no_placeholders(filled)


@pytest.mark.parametrize("name", GPU_PROFILES)
@pytest.mark.parametrize("tier", TIERS)
def test_byog_plan_cli_every_tier(name: str, tier: str) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["plan", name, "--tier", tier, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["tier"] == tier and [r["tier"] for r in out["tiers"]] == list(TIERS)
    assert out["points"] and all("nodes, launcher native" in s["command"] for s in out["servers"])
    assert "#SBATCH --exclusive" in out["slurm_batch"]
    assert out["placeholders"]
    human = runner.invoke(app, ["plan", name, "--tier", tier], env={"COLUMNS": "200"})
    assert human.exit_code == 0 and "GPU-hours" in human.output and "to set before a run" in human.output


def test_byog_plan_refuses_unknown_tier() -> None:
    result = CliRunner().invoke(app, ["plan", "kimi-k3-gb300", "--tier", "huge"])
    assert result.exit_code == 2 and "unknown tier" in result.output


@pytest.mark.parametrize("name", GPU_PROFILES)
def test_speculative_configs_are_vllms(name: str) -> None:
    """Every key is a field of vLLM's SpeculativeConfig; the synthetic length is one vLLM accepts."""
    speculative = pytest.importorskip("vllm.config.speculative")
    fields = set(speculative.SpeculativeConfig.__dataclass_fields__)
    plan, _ = load_plan(name)
    for server, config in plan.servers.items():
        spec = config.speculative_config
        if spec is None:
            continue
        assert set(spec) <= fields, (server, set(spec) - fields)
        if spec.get("rejection_sample_method") == "synthetic":
            n = spec["num_speculative_tokens"]
            rates = speculative.SpeculativeConfig._resolve_synthetic_acceptance_rates(
                n, None, spec["synthetic_acceptance_length"]
            )
            assert rates == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]  # 5 drafts + the bonus token = 6 per step


def test_per_node_launch_lines() -> None:
    """TP16 over 4-GPU trays = 4 srun steps (rank 0 serves, 1-3 headless), each on its own node of the job."""
    out = json.loads(CliRunner().invoke(app, ["plan", "kimi-k3-gb300", "--json"]).output)
    assert sorted(out["per_node_launch"]) == sorted(s["server"] for s in out["servers"])
    tp16 = out["per_node_launch"]["candidate-tp16-spec-synth"]
    assert tp16[0].startswith("candidate-tp16-spec-synth: 4 nodes x 4 GPU(s), TP=16, one srun step per node")
    sruns = [line.strip() for line in tp16 if line.strip().startswith("srun (node")]
    assert [line.split(":")[0] for line in sruns] == [f"srun (node {r})" for r in range(4)]  # the plan's launcher only
    for rank, line in enumerate(sruns):
        assert f"--nodelist=$NODE{rank}" in line and "--gpus-per-node=4" in line and "--overlap" in line
        assert "--container-image=byog-eval@sha256:" in line and "NCCL_MNNVL_ENABLE=1" in line
        assert f"--node-rank {rank}" in line and ("--headless" in line) == (rank > 0)
    assert "--tensor-parallel-size 16" in sruns[0] and "synthetic_acceptance_length" in sruns[0]
    assert "latency_specialized" in sruns[0]
    baseline = [line for line in out["per_node_launch"]["baseline-tp16"] if "srun (node 0)" in line]
    assert baseline and "latency_specialized" not in baseline[0]
    dcp = out["per_node_launch"]["candidate-tp8-dcp8"]
    assert dcp[0].startswith("candidate-tp8-dcp8: 2 nodes x 4 GPU(s), TP=8")
