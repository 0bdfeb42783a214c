"""The numerics differential and conformance suite on the real CPU vLLM, through `byog run`.

One `byog run` of a plan with only a ``numerics:`` section starts three servers once each and
the tests read its run directory:

- ``stock``: eager, float32 (the baseline);
- ``compiled``: torch.compile, float32 (the plain candidate);
- ``bf16``: eager, bfloat16 (the CPU build's default dtype: a known numerical change) with
  ``--max-logprobs 5`` (a server option that breaks one feature: the sampling check's top-20).

float32, because on this CPU (no AVX-512) bfloat16 runs through a slow fallback and, worse for
this test, rounds logits to 1/16 near 10: in bfloat16 *any* kernel change (compiled vs eager
included) moves logprobs by about one bf16 ulp, as much as the dtype change itself
(docs/numerics.md, measured). Pinned: the compiled candidate is "numerically equivalent"; the
bfloat16 one drifts; conformance passes on the baseline and the compiled candidate; the bf16
server's sampling check fails with a one-line reason; verify recomputes it all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.integration

CPU_ENV = "{VLLM_CPU_KVCACHE_SPACE: '1'}"
PLAN = f"""\
name: numerics-cpu
model: {{path: "builtin:smollm2-135m-instruct", max_model_len: 1024}}
servers:
  stock: {{args: [--enforce-eager, --dtype, float32], env: {CPU_ENV}}}
  compiled: {{args: [--dtype, float32], env: {CPU_ENV}}}
  bf16: {{args: [--enforce-eager, --dtype, bfloat16, --max-logprobs, "5"], env: {CPU_ENV}}}
baseline: stock
numerics: {{random_prompts: 2, random_isl: 64, dataset_prompts: 2, dataset_isl: 128, contexts: [1024], max_tokens: 32}}
"""


def byog(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("BYOG_SIGNING_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "byog", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=2400
    )


@pytest.fixture(scope="module")
def numerics_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    work = tmp_path_factory.mktemp("numerics")
    (work / "plan.yaml").write_text(PLAN)
    return work / "run", byog("run", str(work / "plan.yaml"), "--run-dir", str(work / "run"), cwd=work)


@pytest.fixture(scope="module")
def numerics(numerics_run: tuple[Path, subprocess.CompletedProcess[str]]) -> dict[str, Any]:
    run_dir, result = numerics_run
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return dict(json.loads((run_dir / "summary.json").read_text())["numerics"])


def _comparison(numerics: dict[str, Any], candidate: str) -> dict[str, Any]:
    return next(c for c in numerics["comparisons"] if c["candidate"] == candidate)


def test_compiled_candidate_is_within_the_aa_envelope(numerics: dict[str, Any]) -> None:
    compiled = _comparison(numerics, "compiled")
    assert compiled["verdict"] == "numerically equivalent", compiled


def test_bfloat16_candidate_drifts(numerics: dict[str, Any]) -> None:
    changed = _comparison(numerics, "bf16")
    assert changed["verdict"] in ("drifts", "diverges"), changed
    assert any(f["reasons"] for f in changed["families"])


def test_conformance_passes_on_the_baseline_and_the_compiled_candidate(numerics: dict[str, Any]) -> None:
    servers = {s["server"]: s for s in numerics["conformance_servers"]}
    for name in ("stock", "compiled"):
        failed = [f"{c['check']}: {c['reason']}" for c in servers[name]["checks"] if not c["passed"]]
        assert failed == [], name
    assert len(servers["stock"]["checks"]) == 10
    assert next(p for p in numerics["conformance"] if p["candidate"] == "compiled")["conforms"]


def test_the_broken_feature_is_reported_with_a_one_line_reason(numerics: dict[str, Any]) -> None:
    pair = next(p for p in numerics["conformance"] if p["candidate"] == "bf16")
    assert not pair["conforms"]
    failed = [r for r in pair["checks"] if r["outcome"] == "fail"]
    assert [r["check"] for r in failed] == ["sampling_chi_square"]
    reason = failed[0]["reason"]
    assert "\n" not in reason and "HTTP 400" in reason and "max allowed: 5" in reason


def test_raw_rows_and_report(
    numerics_run: tuple[Path, subprocess.CompletedProcess[str]], numerics: dict[str, Any]
) -> None:
    run_dir, _ = numerics_run
    rows = pq.read_table(run_dir / "numerics" / "stock" / "alone.parquet").to_pylist()
    assert sum(r["output"] for r in rows) == 5 * 32 and all(len(r["top_ids"]) == 5 for r in rows)
    assert sum(not r["output"] for r in rows) == 2 * 63 + 2 * 127 + (1024 - 32 - 1)
    assert sorted(p.name for p in (run_dir / "numerics" / "compiled").iterdir()) == ["record.json", "together.parquet"]
    report = (run_dir / "report.md").read_text()
    assert "## Numerics" in report and "### Conformance" in report
    assert (run_dir / "plots" / "numerics_divergence.png").is_file()


def test_verify_recomputes_every_verdict(
    numerics_run: tuple[Path, subprocess.CompletedProcess[str]], numerics: dict[str, Any]
) -> None:
    run_dir, _ = numerics_run
    checked = byog("verify", str(run_dir / "bundle.tar.gz"), "--allow-unsigned", cwd=run_dir.parent)
    assert checked.returncode == 0, checked.stdout + checked.stderr
