"""The committed numerics data re-derives to what docs/numerics.md reports (benchmarks/results/numerics)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from byog.analysis.numerics_summary import summarize_numerics
from byog.core.paths import RunDir
from byog.plans.load import parse_plan

REPO = Path(__file__).resolve().parents[3]
CPU_BF16 = REPO / "benchmarks" / "results" / "numerics" / "cpu-bf16-smollm2"


def test_cpu_bf16_compiled_and_float32_both_drift_by_about_one_ulp() -> None:
    rd = RunDir(CPU_BF16)
    numerics = summarize_numerics(rd, parse_plan(rd.plan_yaml.read_text(), "plan"))
    assert numerics is not None
    by = {c.candidate: c for c in numerics.comparisons}
    assert {k: v.verdict for k, v in by.items()} == {"compiled": "drifts", "fp32": "drifts"}
    for candidate in ("compiled", "fp32"):
        prefill = next(f for f in by[candidate].families if f.family == "prefill")
        for bucket, aa in zip(prefill.candidate, prefill.aa, strict=True):
            assert 0.02 < bucket.mean_abs_dlogprob < 0.1 and 3e-4 < bucket.mean_kl < 3e-3
            assert aa.mean_abs_dlogprob < 0.003  # the A/A noise: 0 below 512 positions
    assert numerics.conformance[0].conforms


def test_the_table_script_prints_every_comparison() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "numerics_table.py")], capture_output=True, text=True, check=True
    ).stdout
    assert "compiled vs stock: drifts" in out and "fp32 vs stock: drifts" in out
