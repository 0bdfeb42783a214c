"""The committed numerics data re-derives to what docs/numerics.md reports (benchmarks/results/numerics)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.analysis.numerics_summary import summarize_numerics
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from tests.support.benchmark_scripts import run_script

pytestmark = pytest.mark.gpu_evidence

REPO = Path(__file__).resolve().parents[3]
CPU_BF16 = REPO / "benchmarks" / "results" / "numerics" / "cpu-bf16-smollm2"
MOE_DUMMY = REPO / "benchmarks" / "results" / "numerics" / "h200-numerics-moe"


def test_cpu_bf16_compiled_and_float32_both_drift_by_about_one_ulp() -> None:
    rd = RunDir(CPU_BF16)
    numerics = summarize_numerics(rd, parse_plan(rd.plan_yaml.read_text(), "plan"))
    assert numerics is not None
    by = {c.candidate: c for c in numerics.comparisons}
    # recorded before the sensitivity control existed: the baseline is insensitive, and the drifts the
    # rule found stand (insensitivity voids only a no-difference verdict)
    assert {k: (v.verdict, v.rule_verdict) for k, v in by.items()} == {
        "compiled": ("drifts", "drifts"),
        "fp32": ("drifts", "drifts"),
    }
    assert numerics.sensitivity[0].reason == "no sensitivity control ran on this baseline"
    for candidate in ("compiled", "fp32"):
        prefill = next(f for f in by[candidate].families if f.family == "prefill")
        for bucket, aa in zip(prefill.candidate, prefill.aa, strict=True):
            assert 0.02 < bucket.mean_abs_dlogprob < 0.1 and 3e-4 < bucket.mean_kl < 3e-3
            assert aa.mean_abs_dlogprob < 0.003  # the A/A noise: 0 below 512 positions
    assert numerics.conformance[0].conforms


def test_the_dummy_weight_moe_run_is_insensitive() -> None:
    rd = RunDir(MOE_DUMMY)
    numerics = summarize_numerics(rd, parse_plan(rd.plan_yaml.read_text(), "plan"))
    assert numerics is not None
    [graphs] = numerics.comparisons
    assert (graphs.verdict, graphs.rule_verdict) == ("insensitive", "numerically equivalent")
    [eager] = numerics.sensitivity
    assert not eager.sensitive and "flat" in eager.reason
    # uniform over SmolLM2's 49,152-token vocabulary: vLLM's dummy weights add almost nothing to the logits
    assert eager.head_ratio is not None and eager.head_ratio < 1.0001
    assert eager.mean_top1_prob is not None and abs(eager.mean_top1_prob * 49152 - 1) < 1e-3
    committed = json.loads((MOE_DUMMY / "summary.json").read_text())["numerics"]
    assert committed["comparisons"][0]["verdict"] == "insensitive"


def test_the_table_script_prints_every_comparison() -> None:
    out = run_script("numerics_table")
    assert "compiled vs stock: drifts" in out and "fp32 vs stock: drifts" in out
    assert "graphs vs eager: insensitive" in out and "sensitivity of eager: INSENSITIVE" in out
    # the verdict table of each run: rule verdict, max distance, greedy divergences, headline
    assert "| comparison | rule verdict | max distance | greedy outputs diverged | headline |" in out
    assert (
        "| fp8kv vs stock | drifts | 1.14e+03 envelopes | 8/9 prompts (A/A 2) | ⚠️ drifts at 1.14e+03 envelopes; "
        "the control fp16 (stock.control) landed at 89.7 envelopes |" in out
    )
    assert "| control fp16 (stock.control) of stock | drifts | 89.7 envelopes | | baseline sensitive |" in out
    assert (
        "| graphs vs eager | numerically equivalent | 2.65e-05 envelopes | 0/9 prompts (A/A 0) | ➖ insensitive" in out
    )


def test_the_h200_smollm2_run_re_derived_with_eager_as_the_variant_reads_the_fp16_control_blind() -> None:
    """docs/numerics.md: with the eager envelope the fp16 control lands at x0.65-1.04 (blind on this
    GPU) and fp8 KV at x4-60: the measurement behind fp8-kv as the default control on CUDA >= 8.9."""
    rd = RunDir(REPO / "benchmarks" / "results" / "numerics" / "h200-numerics-smollm2")
    plan = parse_plan(rd.plan_yaml.read_text(), "plan")
    assert plan.numerics is not None
    tolerance = plan.numerics.tolerance
    from byog.analysis.numerics_summary import BaselinePasses

    passes = BaselinePasses(rd, "stock", "eager")
    judged = {
        server: [d.distance for f in passes.families(rd, server, tolerance) for d in f.distances if d.judged]
        for server in ("stock.control", "fp8kv")
    }
    assert min(judged["stock.control"]) > 0.6 and max(judged["stock.control"]) < 1.1
    assert min(judged["fp8kv"]) > 4 and max(judged["fp8kv"]) < 61
