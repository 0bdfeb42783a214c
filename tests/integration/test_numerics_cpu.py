"""The numerics differential and conformance suite on the real CPU vLLM, through `byog run`.

One `byog run` of a plan with only a ``numerics:`` section starts each server once and the tests
read its run directory:

- ``stock``: eager, float32 (the baseline);
- ``stock.variant``: stock with ``--max-num-batched-tokens 256`` (prefill chunked, batches cut
  differently), the envelope variant byog derives: never a candidate;
- ``compiled``: torch.compile, float32 (a legitimate reorder);
- ``relaunched``: stock again (another process, another batch order);
- ``bf16``: eager, bfloat16 (the CPU build's default dtype: a known numerical change) with
  ``--max-logprobs 5`` (a server option that breaks one feature: the sampling check's top-20).
  It is the sensitivity control too (``numerics.control`` names the same launch), so it starts once;
- ``rope``: stock with rope theta 5% off (``--hf-overrides``): an error that grows with position.

A baseline with flat next-token distributions (vLLM's ``--load-format dummy``) is judged insensitive
and its candidates, control and variant are never launched: that vLLM's dummy weights are flat is
the committed GPU run's (tests/unit/benchmarks/test_numerics_results.py), byog's handling of a flat
baseline the unit suite's (tests/unit/pipeline/test_numerics.py); a server start here would add
neither.

float32, because on this CPU (no AVX-512) bfloat16 runs through a slow fallback and, worse for
this test, rounds logits to 1/16 near 10: in bfloat16 *any* kernel change (compiled vs eager
included) moves logprobs by about one bf16 ulp, as much as the dtype change itself
(docs/numerics.md, measured). Pinned: the control lands beyond the envelope; relaunched stock is
"numerically equivalent" and compiled within a few envelopes of it; bf16 drifts or worse; rope
is further out in its last prefill bucket than in its first;
conformance (on stock, compiled and bf16 only) passes on the baseline and the compiled
candidate; the bf16 server's sampling check fails with a one-line reason; verify recomputes it all.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.support.cli import byog, byog_env

# six server starts in one `byog run` (~7.5 min alone on two AVX2 cores; CI runs this module niced,
# beside the other integration tests: its verdicts are on logprobs, not time): the subprocess's limit
# comes before pytest's, so a run that overstays is killed with its servers, never left running
RUN_TIMEOUT_S = 1700
pytestmark = [pytest.mark.integration, pytest.mark.beside, pytest.mark.timeout(RUN_TIMEOUT_S + 100)]

CPU_ENV = "{VLLM_CPU_KVCACHE_SPACE: '1'}"
ROPE = """{"rope_parameters": {"rope_theta": 105000.0, "rope_type": "default"}}"""
PLAN = f"""\
name: numerics-cpu
model: {{path: "builtin:smollm2-135m-instruct", max_model_len: 1024}}
servers:
  stock: {{args: [--enforce-eager, --dtype, float32], env: {CPU_ENV}}}
  compiled: {{args: [--dtype, float32], env: {CPU_ENV}}}
  relaunched: {{args: [--dtype, float32, --enforce-eager], env: {CPU_ENV}}}
  bf16: {{args: [--enforce-eager, --dtype, bfloat16, --max-logprobs, "5"], env: {CPU_ENV}}}
  rope: {{args: [--enforce-eager, --dtype, float32, --hf-overrides, '{ROPE}'], env: {CPU_ENV}}}
baseline: stock
pairs:
  - {{candidate: compiled, baseline: stock}}
  - {{candidate: relaunched, baseline: stock}}
  - {{candidate: bf16, baseline: stock}}
  - {{candidate: rope, baseline: stock}}
numerics:
  {{random_prompts: 2, random_isl: 64, dataset_prompts: 2, dataset_isl: 128, contexts: [1024], max_tokens: 32,
   control: {{args: [--dtype, bfloat16, --max-logprobs, "5"]}},
   envelope_variant: {{args: [--max-num-batched-tokens, "256"]}}, conformance: [stock, compiled, bf16]}}
"""


@pytest.fixture(scope="module")
def numerics_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    work = tmp_path_factory.mktemp("numerics")
    (work / "plan.yaml").write_text(PLAN)
    return work / "run", byog(
        "run",
        str(work / "plan.yaml"),
        "--run-dir",
        str(work / "run"),
        cwd=work,
        env=byog_env(unsigned=True),
        timeout=RUN_TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def numerics(numerics_run: tuple[Path, subprocess.CompletedProcess[str]]) -> dict[str, Any]:
    run_dir, result = numerics_run
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return dict(json.loads((run_dir / "summary.json").read_text())["numerics"])


def _comparison(numerics: dict[str, Any], candidate: str) -> dict[str, Any]:
    return next(c for c in numerics["comparisons"] if c["candidate"] == candidate)


def _distances(comparison: dict[str, Any], family: str) -> list[float]:
    fam = next(f for f in comparison["families"] if f["family"] == family)
    return [d["distance"] for d in fam["distances"] if d["judged"]]


def test_the_control_lands_beyond_the_envelope(numerics) -> None:
    stock = next(s for s in numerics["sensitivity"] if s["baseline"] == "stock")
    assert stock["sensitive"], stock["reason"]
    assert stock["control"] == "bf16" and stock["variant"] == "stock.variant"
    assert stock["control_distance"] > numerics["tolerance"]["envelope_factor"]


def test_stock_relaunched_is_equivalent_and_compiled_is_near_one_envelope(numerics) -> None:
    relaunched = _comparison(numerics, "relaunched")
    assert relaunched["verdict"] == "numerically equivalent", relaunched
    compiled = _comparison(numerics, "compiled")
    assert compiled["verdict"] in ("numerically equivalent", "drifts"), compiled
    assert compiled["max_distance"] < 10 * numerics["tolerance"]["envelope_factor"], compiled["max_distance"]


def test_bfloat16_candidate_drifts(numerics: dict[str, Any]) -> None:
    changed = _comparison(numerics, "bf16")
    assert changed["verdict"] in ("drifts", "diverges"), changed
    assert any(f["reasons"] for f in changed["families"])


def test_a_rope_theta_error_grows_with_position(numerics) -> None:
    rope = _comparison(numerics, "rope")
    assert rope["verdict"] in ("drifts", "diverges"), rope
    prefill = _distances(rope, "prefill")
    assert prefill[-1] > 2 * prefill[0], prefill


def test_conformance_passes_on_the_baseline_and_the_compiled_candidate(numerics) -> None:
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
    checked = byog(
        "verify",
        str(run_dir / "bundle.tar.gz"),
        "--allow-unsigned",
        cwd=run_dir.parent,
        env=byog_env(unsigned=True),
        timeout=RUN_TIMEOUT_S,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_variant_flag_vllm_refuses_is_one_sentence_and_no_verdict(numerics_run, tmp_path: Path) -> None:
    """The finished run, copied with a broken envelope variant: only that server starts (and is refused)."""
    import shutil

    run_dir, _ = numerics_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("bundle.tar.gz", "summary.json", "report.md"))
    shutil.rmtree(copy / "numerics" / "stock.variant")
    shutil.rmtree(copy / "servers" / "stock.variant")
    plan = (copy / "plan.yaml").read_text()
    (copy / "plan.yaml").write_text(plan.replace('--max-num-batched-tokens, "256"', "--max-num-batched-tokens, lots"))
    result = byog(
        "check", "numerics", "--run-dir", str(copy), cwd=tmp_path, env=byog_env(unsigned=True), timeout=RUN_TIMEOUT_S
    )
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    message = result.stderr.strip().splitlines()[-1]
    assert "numerics.envelope_variant: the server 'stock.variant' did not start" in message, message
    assert "vLLM refused its arguments" in message and "lots" in message and "Traceback" not in result.stderr
    assert not (copy / "summary.json").exists()  # no verdict
