"""The committed H200 results (benchmarks/results/h200/): the table re-prints from them and they agree with themselves.

CI has no GPU: these tests read the raw files the GPU run wrote and re-derive the table with
byog's own formulas, so a change to a formula, a lost file or an edited number shows up here.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu_evidence

REPO = Path(__file__).resolve().parents[3]
RESULTS = REPO / "benchmarks" / "results" / "h200"
BATCH_SIZES = {1, 2, 4, 8, 16, 32, 64}
ISLS = {1, 1024}


def _table():
    spec = importlib.util.spec_from_file_location("h200_table", REPO / "benchmarks" / "h200_table.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def table():
    return _table()


# tag -> the (ISL, B) grid it holds: TP1 and TP2 the full sweep; tp1-greedy re-ran ISL 1024 with
# `vllm bench serve --temperature 0` on a second machine (byog always sends temperature 0).
TAGS = {
    "tp1": {(i, b) for i in ISLS for b in BATCH_SIZES},
    "tp2": {(i, b) for i in ISLS for b in BATCH_SIZES},
    "tp1-greedy": {(1024, b) for b in BATCH_SIZES},
}


@pytest.fixture(scope="module")
def all_rows(table):
    return {tag: table.rows_for(RESULTS / tag) for tag in TAGS}


def test_vllm_point_counts_warmups_against_the_counters(table):
    # 2 measured requests of 4 tokens + 2 warm-ups (copies of the first prompt, 3 tokens in)
    result = {
        "median_tpot_ms": 5.0,
        "median_ttft_ms": 20.0,
        "median_itl_ms": 5.0,
        "output_throughput": 100.0,
        "completed": 2,
        "total_output_tokens": 8,
        "total_input_tokens": 7,
        "input_lens": [3, 4],
        "output_lens": [4, 4],
        "itl_sum_s": [0.015, 0.03],
    }
    counters = {"warmups": 2, "osl": 4, "counter_deltas": {table.GEN: 16.0, table.PROMPT: 13.0}}
    point = table.vllm_point(result, counters)
    assert (point["tokens_out_client"], point["tokens_in_client"]) == (16, 13)
    assert point["tokens_out_server"] == 16.0 and point["tokens_in_server"] == 13.0
    assert table.vllm_request_tpots_s(result) == pytest.approx([0.005, 0.01])


def test_the_table_prints_from_the_committed_results(table, capsys):
    assert table.main(["--results", str(RESULTS)]) == 0
    out = capsys.readouterr().out
    assert "tp1: tensor parallel size 1" in out
    assert "TPOT ratio byog/vLLM" in out


@pytest.mark.parametrize("tag", sorted(TAGS))
def test_each_run_covers_its_grid_with_both_tools(all_rows, tag):
    rows = all_rows[tag]
    assert {(r["isl"], r["batch_size"]) for r in rows} == TAGS[tag]
    for r in rows:
        assert r["byog"] is not None and r["vllm"] is not None, (r["isl"], r["batch_size"])
        assert r["byog"]["n_requests"] == 3 * r["batch_size"]  # 3 measured waves of B
        assert r["vllm"]["completed"] == 3 * r["batch_size"] and r["vllm"]["failed"] == 0
        assert r["byog"]["valid"], r["byog"]["invalid_reasons"]
        assert r["byog"]["client_cpu_share"] < 0.5  # far from one core: the client kept up at every B


@pytest.mark.parametrize("tag", sorted(TAGS))
@pytest.mark.parametrize("tool", ["byog", "vllm"])
def test_token_totals_equal_the_server_counters(all_rows, tag, tool):
    for r in all_rows[tag]:
        side = r[tool]
        assert side["all_osl"], (tool, r["isl"], r["batch_size"])
        assert side["tokens_out_client"] == side["tokens_out_server"], (tool, r["isl"], r["batch_size"])
        assert side["tokens_in_client"] == side["tokens_in_server"], (tool, r["isl"], r["batch_size"])


@pytest.mark.parametrize("tag", sorted(TAGS))
def test_vllm_median_tpot_recomputes_from_its_per_request_data(table, tag):
    paths = sorted((RESULTS / tag / "vllm").glob("vllm-b*-osl*[0-9].json"))
    assert len(paths) == len(TAGS[tag])
    for path in paths:
        result = json.loads(path.read_text())
        median_ms = statistics.median(table.vllm_request_tpots_s(result)) * 1e3
        # vLLM takes TTFT and the first chunk time from two clock reads: microseconds apart
        assert median_ms == pytest.approx(result["median_tpot_ms"], rel=1e-4), path.name


@pytest.mark.parametrize("tag", sorted(TAGS))
def test_byog_tokens_in_the_rows_match_the_point_shape(all_rows, tag):
    for r in all_rows[tag]:
        b = r["byog"]
        sent = 4 * r["batch_size"]  # 1 warm-up wave + 3 measured waves
        assert b["tokens_out_client"] == sent * 256
        assert b["tokens_in_client"] == sent * r["isl"]


def test_byog_recorded_the_tp_size_the_server_reported(table):
    for tag, tp in (("tp1", 1), ("tp2", 2), ("tp1-greedy", 1)):
        records = [json.loads(p.read_text()) for p in (RESULTS / tag).glob("byog-isl*/servers/*/server.json")]
        assert records and all(
            r["tensor_parallel_size"] == tp and r["tensor_parallel_size_from"] == "server" for r in records
        )
        assert table.tensor_parallel_size(RESULTS / tag) == tp


@pytest.mark.parametrize(("tag", "count"), [("tp1", 2), ("tp2", 2), ("tp1-greedy", 1)])
def test_the_fingerprint_names_the_gpus(tag, count):
    env = json.loads((RESULTS / tag / "byog-isl1024" / "env.json").read_text())
    gpu = env["gpu"]
    assert gpu["available"] and gpu["count"] == count
    assert all("H200" in g["name"] for g in gpu["gpus"])
    assert gpu["driver_version"] and gpu["cuda_driver_version"] and len(gpu["topology"]) == gpu["count"]
