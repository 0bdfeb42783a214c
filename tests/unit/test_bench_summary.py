"""summarize_bench on hand-made raw files: exact decode tok/s, validity reasons, bootstrap A/B, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog import __version__
from byog.bench.client import RequestRecord
from byog.bench.rows import write_rows
from byog.bench.summary import summarize_bench
from byog.bundles.rundir import RunDir
from byog.ioutil import atomic_write_json
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.schemas.bench import ClientLoad, PointRecord

MS = 1_000_000
PLAN = """
name: t
model: {path: /m}
servers:
  cand: {runtime: endpoint, url: "http://c"}
  base: {runtime: endpoint, url: "http://b"}
baseline: base
workloads:
  - {kind: batch, name: decode, batch_sizes: [2], isl: [4], osl: [5], warmup_waves: 0, waves: 4}
seeds: [7]
"""


def wave_rows(wave: int, step_ms: float, jitter_ms: float = 0.0, osl: int = 5) -> list[RequestRecord]:
    """B = 2: request 0's first token at 100 ms, request 1's at 105 ms, then one token every step_ms."""
    rows = []
    base = wave * 10_000 * MS
    for r in range(2):
        first = 100 + 5 * r
        times = [int(base + (first + i * (step_ms + jitter_ms * ((wave + i) % 3 - 1))) * MS) for i in range(osl)]
        rows.append(RequestRecord(request_index=wave * 2 + r, wave=wave, warmup=False, expected_n_in=4, t_send_ns=base,
                                  chunk_t_ns=times, chunk_tokens=[1] * osl, n_in=4, n_out=osl))
    return rows


def write_point(run_dir: RunDir, plan, server: str, rows: list[RequestRecord], counter_deltas=None,  # type: ignore[no-untyped-def]
                lag_p99_s: float = 0.001, cpu_share: float = 0.1) -> None:
    point = expand_plan(plan)[0]
    write_rows(run_dir.bench_rows(server, point.point_id), rows)
    record = PointRecord(server=server, point=point, prompts_label="random-ids", status="complete", started_at="t",
                         duration_s=1.0, t_start_ns=0, t_end_ns=1, byog_version=__version__,
                         client=ClientLoad(cpu_share=cpu_share, loop_lag_p99_s=lag_p99_s, loop_lag_max_s=0.02,
                                           cpu_share_limit=0.9, loop_lag_share_of_itl=0.25,
                                           loop_lag_floor_s=0.001),
                         counter_deltas=counter_deltas or {"vllm:generation_tokens_total": float(sum(r.n_out for r in rows))})
    atomic_write_json(run_dir.bench_point(server, point.point_id), record.model_dump(mode="json"))


def test_decode_tok_s_of_a_hand_computed_wave(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    write_point(run_dir, plan, "base", [row for w in range(4) for row in wave_rows(w, 10.0)])
    (point,) = [p for p in summarize_bench(run_dir, plan)["points"] if p["server"] == "base"]
    assert point["valid"], point["invalid_reasons"]
    # window [105, 140] ms; tokens arriving in (105, 140]: 110,120,130,140 and 115,125,135 -> 7 in 35 ms
    assert point["metrics"]["decode_tok_s"] == pytest.approx(200.0)
    assert point["metrics"]["decode_window_s"] == pytest.approx(4 * 0.035)
    assert point["metrics"]["tpot_s"]["p50"] == pytest.approx(0.010)
    assert point["metrics"]["ttft_s"]["p50"] == pytest.approx(0.1025)
    assert point["metrics"]["tokens_per_step"] == pytest.approx(2.0)  # no step counter: B x AL
    assert point["metrics"]["decode_step_s"] == pytest.approx(0.010)
    assert point["metrics"]["crosscheck_decode_tok_s"] == pytest.approx(200.0)
    cand = next(p for p in summarize_bench(run_dir, plan)["points"] if p["server"] == "cand")
    assert cand["valid"] is False and cand["invalid_reasons"] == ["not measured (no point record)"]


def test_bootstrap_separates_a_2x_speedup_and_calls_equal_servers_within_noise(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    faster = RunDir(tmp_path / "faster")
    write_point(faster, plan, "cand", [row for w in range(4) for row in wave_rows(w, 5.0, jitter_ms=0.5)])
    write_point(faster, plan, "base", [row for w in range(4) for row in wave_rows(w, 10.0, jitter_ms=1.0)])
    summary = summarize_bench(faster, plan)
    by_metric = {c["metric"]: c for c in summary["comparisons"]}
    decode = by_metric["decode_tok_s"]
    assert 1.7 < decode["ratio"] < 2.6 and decode["ci_low"] > 1.0 and decode["within_noise"] is False
    assert by_metric["tpot_s.p50"]["ratio"] == pytest.approx(0.5, rel=0.1) and by_metric["tpot_s.p50"]["ci_high"] < 1.0
    assert by_metric["tok_s_user.p50"]["ratio"] == pytest.approx(1 / by_metric["tpot_s.p50"]["ratio"])
    assert json.dumps(summary, sort_keys=True, allow_nan=False) == json.dumps(summarize_bench(faster, plan), sort_keys=True, allow_nan=False)

    same = RunDir(tmp_path / "same")
    write_point(same, plan, "cand", [row for w in range(4) for row in wave_rows(w, 10.0, jitter_ms=1.0)])
    write_point(same, plan, "base", [row for w in range(4) for row in wave_rows(w, 10.0, jitter_ms=1.0)])
    decode = next(c for c in summarize_bench(same, plan)["comparisons"] if c["metric"] == "decode_tok_s")
    assert decode["ratio"] == pytest.approx(1.0) and decode["within_noise"] is True


def test_validity_reasons_are_recorded_not_dropped(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    rows = [row for w in range(4) for row in wave_rows(w, 10.0)]
    rows[0].n_out, rows[0].chunk_t_ns, rows[0].chunk_tokens = 4, rows[0].chunk_t_ns[:4], [1] * 4  # short answer
    rows[1].n_in = 5  # prompt one token too long
    rows[2].error, rows[2].chunk_t_ns, rows[2].chunk_tokens, rows[2].n_out = "HTTP 500: boom", [], [], 0
    write_point(run_dir, plan, "base", rows, counter_deltas={"vllm:generation_tokens_total": 99.0, "vllm:prefix_cache_hits_total": 16.0})
    (point,) = [p for p in summarize_bench(run_dir, plan)["points"] if p["server"] == "base"]
    text = " | ".join(point["invalid_reasons"])
    assert point["valid"] is False and point["n_requests"] == 8 and point["metrics"] is not None
    assert "1 of 8 requests failed (first: HTTP 500: boom)" in text
    assert "1 requests returned n_out != OSL 5 (4)" in text
    assert "1 requests had a prompt of the wrong length" in text
    assert "prefix cache hit 16 prompt tokens" in text
    assert "the server generated 99 tokens during the point but the client counted 34" in text
    assert "waves 1 have no decode window" in text  # wave 1 lost a request, so no full-batch window


def test_client_saturation_is_judged_against_the_points_own_itl(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    rows = [row for w in range(4) for row in wave_rows(w, 10.0)]  # median ITL 10 ms -> lag limit 2.5 ms
    ok, late, busy = RunDir(tmp_path / "ok"), RunDir(tmp_path / "late"), RunDir(tmp_path / "busy")
    write_point(ok, plan, "base", rows, lag_p99_s=0.002)
    write_point(late, plan, "base", rows, lag_p99_s=0.004)
    write_point(busy, plan, "base", rows, cpu_share=0.97)
    reasons = {name: next(p for p in summarize_bench(d, plan)["points"] if p["server"] == "base")["invalid_reasons"]
               for name, d in (("ok", ok), ("late", late), ("busy", busy))}
    assert reasons["ok"] == []
    assert reasons["late"] == ["client saturated: event-loop lag P99 4.0 ms is over 25% of the median ITL (limit 2.5 ms)"]
    assert reasons["busy"] == ["client saturated: it used 97% of a core (limit 90%)"]
