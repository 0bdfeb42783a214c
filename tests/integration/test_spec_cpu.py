"""Speculative decoding on the real CPU vLLM: the smoke-spec profile end to end, and a config the
server cannot run failing fast with vLLM's own reason.

`byog run smoke-spec` starts each server once (ngram with 4 draft tokens, then stock) and measures
B = 1 and 4 on repeated GSM8K passages; every test below reads that one run. The numbers are
printed (pytest -s) so CI logs show them.
"""

from __future__ import annotations

import json
import time
from itertools import pairwise
from pathlib import Path

import pytest

from byog.analysis.metrics import CROSSCHECK_TOLERANCE
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.core.safe_text import md_text
from byog.schemas.bench import read_request_rows
from byog.schemas.summary import read_summary
from tests.support.cli import byog, byog_env

pytestmark = pytest.mark.integration

NUM_SPEC = 4  # the profile's num_speculative_tokens


@pytest.fixture(scope="module")
def spec_run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    work = tmp_path_factory.mktemp("spec")
    result = byog("run", "smoke-spec", "--run-dir", str(work / "run"), cwd=work, env=byog_env(), timeout=1800)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return RunDir(work / "run")


def _points(run_dir: RunDir, server: str) -> dict[str, object]:
    return {p.point_id: p for p in read_summary(run_dir.summary_json).bench.points if p.server == server}


def test_ngram_point_measures_acceptance(spec_run: RunDir) -> None:
    for point_id, p in _points(spec_run, "ngram").items():
        m = p.metrics  # type: ignore[attr-defined]
        print(
            f"\n{point_id}: AL {m.acceptance_length:.3f} CI {m.acceptance_length_ci}, per position "
            f"{[round(a, 3) for a in m.acceptance_per_position]}, coverage {m.draft_coverage:.3f}, "
            f"tokens/request-step {m.tokens_per_request_step:.3f}, decode {m.decode_tok_s:.1f} tok/s, "
            f"step {m.decode_step_s * 1e3:.1f} ms, cross-check ratio {m.crosscheck_ratio:.3f}"
        )
        assert m.acceptance_length > 1.0
        low, high = m.acceptance_length_ci
        assert low <= m.acceptance_length <= high
        rates = m.acceptance_per_position
        assert len(rates) == NUM_SPEC and all(a >= b for a, b in pairwise(rates)), rates  # non-increasing
        assert 0 < m.draft_coverage <= 1
        assert 1 < m.tokens_per_request_step <= m.acceptance_length
        assert p.prompts == "dataset:gsm8k:repeated"  # type: ignore[attr-defined]


def test_crosscheck_agrees_within_the_documented_tolerance(spec_run: RunDir) -> None:
    """steps/s x AL x B over the measured decode tok/s is AL / (tokens per request-step in the
    window); with the counters' tokens per request-step in place of the window's it must hold to
    the tolerance docs/metrics.md states. Stock (AL = 1, one token per step) gives 1."""
    for point_id, p in _points(spec_run, "ngram").items():
        m = p.metrics  # type: ignore[attr-defined]
        expected = m.acceptance_length / m.tokens_per_request_step
        print(
            f"\n{point_id}: cross-check ratio {m.crosscheck_ratio:.3f}, expected AL / tokens-per-request-step "
            f"{expected:.3f}"
        )
        assert abs(m.crosscheck_ratio / expected - 1) <= CROSSCHECK_TOLERANCE
    for point_id, p in _points(spec_run, "stock").items():
        m = p.metrics  # type: ignore[attr-defined]
        print(f"\n{point_id} (stock): decode {m.decode_tok_s:.1f} tok/s, cross-check ratio {m.crosscheck_ratio:.4f}")
        assert m.acceptance_length is None
        assert abs(m.crosscheck_ratio - 1) <= CROSSCHECK_TOLERANCE


def test_token_accounting_with_speculation(spec_run: RunDir) -> None:
    """Chunks carry k tokens (1 <= k <= 1 + drafts), they sum to the server's usage, and the server's
    generated-token counter equals the client's count."""
    for point_id, p in _points(spec_run, "ngram").items():
        rows = read_request_rows(spec_run.bench_rows("ngram", point_id))
        ks = [k for r in rows for k in r.chunk_tokens]
        assert all(r.error is None and r.n_out == 128 and sum(r.chunk_tokens) == r.n_out for r in rows)
        assert min(ks) >= 1 and max(ks) <= 1 + NUM_SPEC and any(k > 1 for k in ks)
        record = json.loads(spec_run.bench_point("ngram", point_id).read_text())
        assert record["counter_deltas"]["vllm:generation_tokens_total"] == sum(r.n_out for r in rows)
        hard = [r for r in p.invalid_reasons if not r.startswith("client saturated")]  # type: ignore[attr-defined]
        assert hard == [], hard


def test_no_gpu_here_power_is_absent_with_its_reason(spec_run: RunDir) -> None:
    p = next(iter(_points(spec_run, "ngram").values()))
    power = p.metrics.power  # type: ignore[attr-defined]
    assert power.available is False and power.reason and power.energy_j is None and power.j_per_token is None
    report = spec_run.report_md.read_text()
    assert "### Speculative decoding" in report and "### Decode matrices" in report
    assert f"Not measured: {md_text(power.reason)}" in report  # bundle text, markdown-escaped as every reason is


def test_the_bundle_verifies_every_new_number(spec_run: RunDir) -> None:
    result = byog("verify", str(spec_run.root / "bundle.tar.gz"), "--allow-unsigned", timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_synthetic_acceptance_on_cpu_fails_fast_with_vllms_reason(tmp_path: Path) -> None:
    """vLLM's CPU build accepts the config but its sampler asserts at the first request: the sweep
    says why (vLLM's own line) and does not restart the server or try its other points."""
    from byog.bench.sweep import run_bench_for_server
    from byog.images.models import prepare_model
    from byog.plans.load import parse_plan
    from byog.runtimes.local import LocalRuntime

    plan = parse_plan(
        """
name: synthetic-on-cpu
model: {path: builtin:smollm2-135m-instruct, max_model_len: 2048}
servers:
  synthetic:
    runtime: local
    args: ["--enforce-eager"]
    env: {VLLM_CPU_KVCACHE_SPACE: "1"}
    speculative_config: {method: ngram, num_speculative_tokens: 4, prompt_lookup_max: 4, prompt_lookup_min: 2,
                         rejection_sample_method: synthetic, synthetic_acceptance_length: 3}
baseline: synthetic
workloads:
  - {kind: batch, name: spec, batch_sizes: [1, 2], isl: [16], osl: [16], warmup_waves: 0, waves: 1}
""",
        "synthetic-on-cpu",
    )
    run_dir = RunDir(tmp_path / "run")
    server = LocalRuntime().launch(
        "synthetic", plan.servers["synthetic"], prepare_model(plan.model), run_dir.server_dir("synthetic")
    )
    try:
        t0 = time.monotonic()
        result = run_bench_for_server(plan, "synthetic", server, run_dir, NullReporter())
        elapsed = time.monotonic() - t0
    finally:
        server.stop()
    print(f"\nsynthetic on CPU: gave up after {elapsed:.1f} s: {result['aborted']}")
    assert "Synthetic acceptance not supported with CPU sampling" in (result["aborted"] or "")
    assert result["restarts"] == 0 and result["failed"] == ["spec-b1-isl16-osl16"] and result["run"] == []
    record = json.loads(run_dir.bench_point("synthetic", "spec-b1-isl16-osl16").read_text())
    assert record["status"] == "failed" and "Synthetic acceptance not supported with CPU sampling" in record["error"]
    # fast by construction, not by the clock: no restart (above) and the next point never tried
    assert not run_dir.bench_point("synthetic", "spec-b2-isl16-osl16").is_file()
