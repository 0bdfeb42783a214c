"""Evals against the REAL CPU vLLM (SmolLM2-135M, eager): lm-eval over the OpenAI API, offline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from byog.analysis.counters import GENERATION_TOKENS, PROMPT_TOKENS, counter_deltas
from byog.analysis.eval_summary import summarize_evals
from byog.bench.server_api import metrics_text
from byog.core.paths import RunDir
from byog.evals.runner import run_task, write_task
from byog.plans.tasks import get_task
from byog.runtimes.record import resolved_config
from byog.schemas.plan import Plan
from tests.support.gated import find_texts, gpqa_fixture_texts

pytestmark = pytest.mark.integration


def test_gsm8k_three_items(endpoint, shared_datasets: Path, tmp_path: Path) -> None:
    info = resolved_config(endpoint.base_url).server_info
    run = run_task(
        get_task("gsm8k"), "shared", endpoint, seeds=[1234], limit=3, data_dir=shared_datasets, server_info=info
    )
    rd = RunDir(tmp_path)
    write_task(rd, "shared", "gsm8k", run)
    rows = pq.read_table(rd.eval_items("shared", "gsm8k")).to_pylist()
    assert [r["item_id"] for r in rows] == ["test:0", "test:1", "test:2"]
    assert [r["target"] for r in rows] == ["18", "3", "70000"]  # the gold answers of the first three test items
    assert all(r["score"] in (0.0, 1.0) and r["seed"] == 1234 and r["extracted_answer"] for r in rows)
    results = json.loads(rd.eval_results("shared", "gsm8k").read_text())
    assert results["data"]["source"] == "local"
    assert results["data"]["file_sha256"]["test"] == "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"
    assert results["runner"]["lm_eval_version"] == "0.4.13" and results["runner"]["model"] == "local-completions"
    assert results["task"]["version"] == "gsm8k-5shot-strict@1" and results["sampling"]["do_sample"] is False
    assert results["score"] == pytest.approx(100 * sum(r["score"] for r in rows) / 3)
    c = results["extra"]["concurrency"]  # what the server reported it holds, not a constant
    assert c["source"] == "server capacity" and c["tokens_per_request"] == 1024 + 256
    assert c["num_concurrent"] == min(c["max_num_seqs"], c["kv_cache_tokens"] // c["tokens_per_request"])
    print(f"\ngsm8k 3 items: score {results['score']:.1f}, wall {results['wall_s']:.1f} s")


def test_mrcr_on_generated_rows(endpoint) -> None:
    run = run_task(get_task("mrcr_generated"), "shared", endpoint, seeds=[7], limit=2, data_dir=None)
    r = run.results
    assert (
        r["data"]["source"] == "generated"
        and r["data"]["label"].startswith("generated")
        and r["data"]["label"] != "MRCR v2"
    )
    assert r["n_items"] == 2 and r["extra"]["token_counter"].startswith(("tiktoken:o200k_base", "server-tokenize:"))
    assert all(0.0 <= row["score"] <= 1.0 and row["bin"] and row["n_output_tokens"] for row in run.rows)
    print(f"\nmrcr_generated 2 rows: score {r['score']:.1f}, bins {r['extra']['bins']}, wall {r['wall_s']:.1f} s")


def test_gpqa_fixture_text_never_reaches_the_run_dir(endpoint, tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    task = get_task("gpqa_diamond")
    for server in ("candidate", "baseline"):
        run = run_task(
            task,
            server,
            endpoint,
            seeds=[1, 2],
            limit=5,
            data_dir=tmp_path / "no-data",
            gen_overrides={"max_gen_toks": 64},
        )
        write_task(rd, server, task.name, run)
    plan = Plan(
        name="g",
        model={"path": "m"},
        servers={"candidate": {}, "baseline": {}},
        baseline="baseline",
        evals=[{"task": "gpqa_diamond", "passes": 2}],
        seeds=[1, 2],
    )
    (tmp_path / "summary.json").write_text(summarize_evals(rd, plan).model_dump_json())
    results = json.loads(rd.eval_results("candidate", task.name).read_text())
    assert results["data"]["source"] == "fixture" and "not Idavidrein/gpqa" in results["data"]["label"]
    assert results["sampling"]["temperature"] == 0.6 and results["sampling"]["seeds"] == [1, 2]
    assert find_texts(tmp_path, gpqa_fixture_texts()) == []


def test_byog_eval_command(endpoint, shared_datasets: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "byog",
            "eval",
            "--endpoint",
            endpoint.base_url,
            "--tasks",
            "gsm8k,mrcr",
            "--limit",
            "2",
            "--data-dir",
            str(shared_datasets),
            "--run-dir",
            str(tmp_path / "run"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert [r["task"] for r in out["results"]] == ["gsm8k", "mrcr"]
    assert out["results"][1]["data_source"] == "fixture"
    assert (tmp_path / "run" / "evals" / "endpoint" / "mrcr" / "items.parquet").is_file()
    # a rerun finds both tasks complete and sends nothing
    again = subprocess.run(proc.args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "already complete" in again.stderr


def test_an_eval_the_servers_context_cannot_hold_is_refused_before_any_request(endpoint, tmp_path: Path) -> None:
    """GSM8K reserves 1,024 tokens for its prompts: answers of max_model_len tokens cannot fit. byog eval
    learns the context from the real server's /v1/models and refuses in one sentence, exit 2, and the
    server's own counters show that nothing reached it (before, the answers were silently cut to fit)."""
    context = endpoint.max_model_len
    assert context, "the server says its context"
    before = metrics_text(endpoint.base_url)
    proc = subprocess.run(
        [sys.executable, "-m", "byog", "eval", "--endpoint", endpoint.base_url, "--tasks", "gsm8k"]
        + ["--max-gen-toks", str(context), "--run-dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"holds at most max_model_len = {context}: raise it to at least {1024 + context}" in proc.stderr
    assert "Traceback" not in proc.stderr
    served = counter_deltas(before, metrics_text(endpoint.base_url))
    assert served[PROMPT_TOKENS] == 0 and served[GENERATION_TOKENS] == 0


def test_gsm8k_cot_chat_goes_through_the_chat_template(endpoint, shared_datasets: Path) -> None:
    run = run_task(
        get_task("gsm8k_cot_chat"),
        "shared",
        endpoint,
        seeds=[5],
        limit=2,
        data_dir=shared_datasets,
        gen_overrides={"max_gen_toks": 128},
    )
    assert (
        run.results["runner"]["model"] == "local-chat-completions"
        and run.results["runner"]["apply_chat_template"] is True
    )
    assert [r["target"] for r in run.rows] == ["18", "3"] and all(r["extracted_answer"] for r in run.rows)
