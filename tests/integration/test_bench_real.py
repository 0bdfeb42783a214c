"""byog's bench on the real CPU vLLM: exact token accounting, ISL = 1, chat, and agreement with `vllm bench serve`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byog.bench.crosscheck import run_byog, run_vllm_bench_serve
from byog.cli import app

pytestmark = pytest.mark.integration

# Each tool's mean TPOT against the server's own mean TPOT over the same requests (the
# vllm:request_time_per_output_token_seconds histogram, read before and after each run). The server
# times a request's tokens in its engine; a client times their reads, and the two differ only where a
# first or last token was read late (its process, or the server's front end, stalled: a middle token
# read late moves no TPOT). byog names such reads (crosscheck.late_reads; CI once read 0.906 of the
# server's TPOT: 1.4 s of the 8 requests' decode went unseen), and a run off the band that names one is
# measured again: a stall is the box's, not the client's. A named read that left the run inside the
# band is no failure (with two busy loops beside, three runs in a row named a last-token burst, the
# last of them 0.9988 of the server's TPOT). A read late enough to move the mean by 1 % at 8
# requests of 32 tokens is ~2.5 steps late, so it is named; a client that is late at every first
# token by less than a step is not, and it fails here. The band is 1 % (undisturbed runs agreed
# within 0.5 % with the unit suite running beside), and it still sees a TPOT divided by n_out
# instead of n_out - 1 (3.1 % at OSL 32, asserted below). The 2 % byog-vs-vLLM target is
# benchmarks/fidelity.py's, on the GPU.
SERVER_AGREEMENT = 0.01
ATTEMPTS = 3
# vLLM's own client is a second witness, not byog's measurement, and it has no such guarantee: with the
# unit suite running at nice 19 beside it, its first chunks arrived late enough to read 0.973 of the
# server's TPOT while byog's client stayed within the band above. It must still agree to a sanity band.
VLLM_CLIENT_AGREEMENT = 0.05


def _client_over_server(run: dict[str, Any]) -> float:
    return float(run["mean_tpot_s"] / run["server_mean_tpot_s"])


def _in_band(run: dict[str, Any]) -> bool:
    """byog's client within SERVER_AGREEMENT of the server: the rule a run passes by, and is not measured again by."""
    return abs(_client_over_server(run) - 1) < SERVER_AGREEMENT


def test_byog_and_vllm_bench_serve_each_measure_the_servers_tpot_and_count_its_tokens(endpoint, smollm2) -> None:
    kw = dict(isl=32, osl=32, concurrency=1, num_prompts=8)
    for attempt in range(1, ATTEMPTS + 1):
        byog = run_byog(endpoint.base_url, endpoint.model, smollm2.tokenizer, **kw)
        if _in_band(byog) or not byog["late_reads"]:
            break
        print(f"\nattempt {attempt}: client / server {_client_over_server(byog):.5f}, read late: {byog['late_reads']}")
    vllm = run_vllm_bench_serve(endpoint.base_url, endpoint.model, smollm2.tokenizer, **kw)
    # exact: what byog counted is what the server says it processed
    assert byog["errors"] == [] and byog["completed"] == 8
    assert byog["total_output_tokens"] == 8 * 32 == byog["server_generation_tokens"]
    assert byog["total_input_tokens"] == 8 * 32 == byog["server_prompt_tokens"]
    assert vllm["completed"] == 8 and vllm["total_output_tokens"] == vllm["server_generation_tokens"]
    print(
        f"\nmean TPOT, client / server: byog {_client_over_server(byog):.5f}, vllm {_client_over_server(vllm):.5f}"
        f" (byog {byog['mean_tpot_s'] * 1e3:.2f} ms, vllm {vllm['mean_tpot_s'] * 1e3:.2f} ms)"
    )
    assert _in_band(byog), byog
    assert abs(_client_over_server(vllm) - 1) < VLLM_CLIENT_AGREEMENT, vllm
    off_by_one = _client_over_server(byog) * (kw["osl"] - 1) / kw["osl"]
    assert abs(off_by_one - 1) > SERVER_AGREEMENT, "the band must see a TPOT divided by n_out"


# What a loaded box does to a point's timing (byog flags it, and this test times nothing): the client
# falls behind, or at B=2 one request's answer is done before the other's first token. A flagged point
# is measured once (REMEASURE_NEVER): re-measuring is tests/unit/bench/test_sweep.py's, and on a box
# that stays busy each attempt would first wait out settle.SETTLE_MAX_S for a core to idle.
LOAD_REASONS = ("client saturated", "have no decode window")
REMEASURE_NEVER = ["--remeasure", "0"]


def _timing_only(reasons: list[str]) -> list[str]:
    return [r for r in reasons if not any(said in r for said in LOAD_REASONS)]


def test_bench_cli_writes_a_resumable_run_dir_with_isl_1_and_chat(endpoint, tmp_path: Path) -> None:
    runner = CliRunner()
    run_dir = tmp_path / "run"
    args = [
        "bench",
        "--endpoint",
        endpoint.base_url,
        "--batch-sizes",
        "1,2",
        "--isl",
        "1",
        "--osl",
        "32",
        "--waves",
        "2",
        "--warmup-waves",
        "1",
        "--run-dir",
        str(run_dir),
        "--json",
        *REMEASURE_NEVER,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout[result.stdout.index("{") :])
    points = {p["point_id"]: p for p in out["points"]}
    assert sorted(points) == ["decode-b1-isl1-osl32", "decode-b2-isl1-osl32"]
    for p in points.values():
        assert _timing_only(p["invalid_reasons"]) == [] and p["n_requests"] == p["batch_size"] * 2
        assert p["metrics"]["tpot_s"]["p50"] > 0
    assert points["decode-b1-isl1-osl32"]["metrics"]["decode_tok_s"] > 0  # one request: every wave has a window
    rows = run_dir / "bench" / "endpoint" / "decode-b2-isl1-osl32.parquet"
    import pyarrow.parquet as pq

    table = pq.read_table(rows).to_pylist()
    assert [r["n_in"] for r in table] == [1] * 6 and [r["n_out"] for r in table] == [32] * 6
    record = json.loads((run_dir / "bench" / "endpoint" / "decode-b2-isl1-osl32.json").read_text())
    assert record["counter_deltas"]["vllm:generation_tokens_total"] == 6 * 32
    assert record["counter_deltas"]["vllm:prompt_tokens_total"] == 6 * 1

    again = runner.invoke(app, args)  # same flags, same run dir: everything is skipped
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout[again.stdout.index("{") :])["sweep"]["skipped"] == sorted(points)

    # OSL 32 and a warm-up wave: with 8 tokens and a cold chat template, one request could finish
    # before the other's first token, and the wave would rightly have no decode window.
    chat = runner.invoke(
        app,
        [
            "bench",
            "--endpoint",
            endpoint.base_url,
            "--api",
            "chat",
            "--batch-sizes",
            "2",
            "--isl",
            "16",
            "--osl",
            "32",
            "--waves",
            "1",
            "--warmup-waves",
            "1",
            "--run-dir",
            str(tmp_path / "chat"),
            "--json",
            *REMEASURE_NEVER,
        ],
    )
    assert chat.exit_code == 0, chat.output
    (point,) = json.loads(chat.stdout[chat.stdout.index("{") :])["points"]
    assert _timing_only(point["invalid_reasons"]) == []


def test_random_text_prompts_are_text_the_server_counts_as_exactly_isl_tokens(
    endpoint, smollm2, tmp_path: Path
) -> None:
    from byog.bench.prompts import ServerTokenizer, build_prompts

    tok = ServerTokenizer(endpoint.base_url, endpoint.model)
    try:
        prompts = build_prompts(
            kind="random",
            dataset=None,
            api="completions",
            isl=96,
            count=4,
            seed=3,
            point_id="text-check",
            server=tok,
            tokenizer_path=smollm2.tokenizer,
            as_text=True,
        )
        assert all(isinstance(p.body, str) for p in prompts)  # the server tokenizes them, as for vLLM's client
        assert [len(tok.encode(p.body, special_tokens=True)) for p in prompts] == [96] * 4
    finally:
        tok.close()
    run_dir = tmp_path / "text"
    args = [
        "bench",
        "--endpoint",
        endpoint.base_url,
        "--batch-sizes",
        "2",
        "--isl",
        "96",
        "--osl",
        "8",
        "--waves",
        "1",
        "--warmup-waves",
        "0",
        "--prompts",
        "random-text",
        "--run-dir",
        str(run_dir),
        "--json",
        *REMEASURE_NEVER,
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    import pyarrow.parquet as pq

    table = pq.read_table(run_dir / "bench" / "endpoint" / "decode-b2-isl96-osl8.parquet").to_pylist()
    assert [r["n_in"] for r in table] == [96, 96]  # the server's own usage.prompt_tokens
    record = json.loads((run_dir / "bench" / "endpoint" / "decode-b2-isl96-osl8.json").read_text())
    assert record["prompts_label"] == "random-text" and record["point"]["prompts"] == {"kind": "random", "send": "text"}
