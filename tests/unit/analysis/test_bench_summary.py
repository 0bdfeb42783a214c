"""summarize_bench on hand-made raw files: exact decode tok/s, validity reasons, bootstrap A/B, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog import __version__
from byog.analysis.bench_summary import summarize_bench
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.schemas.bench import ClientLoad, PointRecord, PowerTrace, RequestRow, write_request_rows

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


def wave_rows(wave: int, step_ms: float, jitter_ms: float = 0.0, osl: int = 5) -> list[RequestRow]:
    """B = 2: request 0's first token at 100 ms, request 1's at 105 ms, then one token every step_ms."""
    rows = []
    base = wave * 10_000 * MS
    for r in range(2):
        first = 100 + 5 * r
        times = [int(base + (first + i * (step_ms + jitter_ms * ((wave + i) % 3 - 1))) * MS) for i in range(osl)]
        rows.append(
            RequestRow(
                request_index=wave * 2 + r,
                wave=wave,
                warmup=False,
                expected_n_in=4,
                t_send_ns=base,
                chunk_t_ns=times,
                chunk_tokens=[1] * osl,
                n_in=4,
                n_out=osl,
            )
        )
    return rows


def write_point(
    run_dir: RunDir,
    plan,
    server: str,
    rows: list[RequestRow],
    counter_deltas=None,  # type: ignore[no-untyped-def]
    lag_p99_s: float = 0.001,
    cpu_share: float = 0.1,
    measured_counter_deltas=None,
    power=None,
) -> None:
    point = expand_plan(plan)[0]
    write_request_rows(run_dir.bench_rows(server, point.point_id), rows)
    record = PointRecord(
        server=server,
        point=point,
        prompts_label="random-ids",
        status="complete",
        started_at="t",
        duration_s=1.0,
        t_start_ns=0,
        t_end_ns=1,
        byog_version=__version__,
        client=ClientLoad(
            cpu_share=cpu_share,
            loop_lag_p99_s=lag_p99_s,
            loop_lag_max_s=0.02,
            cpu_share_limit=0.9,
            loop_lag_share_of_itl=0.25,
            loop_lag_floor_s=0.001,
        ),
        counter_deltas=counter_deltas or {"vllm:generation_tokens_total": float(sum(r.n_out for r in rows))},
        measured_counter_deltas=measured_counter_deltas,
        power=power,
    )
    atomic_write_json(run_dir.bench_point(server, point.point_id), record.model_dump(mode="json"))


def test_decode_tok_s_of_a_hand_computed_wave(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    write_point(run_dir, plan, "base", [row for w in range(4) for row in wave_rows(w, 10.0)])
    (point,) = [p for p in summarize_bench(run_dir, plan).model_dump(mode="json")["points"] if p["server"] == "base"]
    assert point["valid"], point["invalid_reasons"]
    # window [105, 140] ms; tokens arriving in (105, 140]: 110,120,130,140 and 115,125,135 -> 7 in 35 ms
    assert point["metrics"]["decode_tok_s"] == pytest.approx(200.0)
    assert point["metrics"]["decode_window_s"] == pytest.approx(4 * 0.035)
    assert point["metrics"]["tpot_s"]["p50"] == pytest.approx(0.010)
    assert point["metrics"]["ttft_s"]["p50"] == pytest.approx(0.1025)
    assert point["metrics"]["tokens_per_step"] == pytest.approx(2.0)  # 7 tokens in 3.5 chunks per request
    assert point["metrics"]["decode_steps"] == pytest.approx(4 * 3.5)
    assert point["metrics"]["decode_step_s"] == pytest.approx(0.010)
    assert point["metrics"]["crosscheck_decode_tok_s"] == pytest.approx(200.0)
    cand = next(p for p in summarize_bench(run_dir, plan).model_dump(mode="json")["points"] if p["server"] == "cand")
    assert cand["valid"] is False and cand["invalid_reasons"] == ["not measured (no point record)"]


def test_bootstrap_separates_a_2x_speedup_and_calls_equal_servers_within_noise(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    faster = RunDir(tmp_path / "faster")
    write_point(faster, plan, "cand", [row for w in range(4) for row in wave_rows(w, 5.0, jitter_ms=0.5)])
    write_point(faster, plan, "base", [row for w in range(4) for row in wave_rows(w, 10.0, jitter_ms=1.0)])
    summary = summarize_bench(faster, plan).model_dump(mode="json")
    by_metric = {c["metric"]: c for c in summary["comparisons"]}
    decode = by_metric["decode_tok_s"]
    assert 1.7 < decode["ratio"] < 2.6 and decode["ci_low"] > 1.0 and decode["within_noise"] is False
    assert by_metric["tpot_s.p50"]["ratio"] == pytest.approx(0.5, rel=0.1) and by_metric["tpot_s.p50"]["ci_high"] < 1.0
    assert by_metric["tok_s_user.p50"]["ratio"] == pytest.approx(1 / by_metric["tpot_s.p50"]["ratio"])
    assert json.dumps(summary, sort_keys=True, allow_nan=False) == json.dumps(
        summarize_bench(faster, plan).model_dump(mode="json"), sort_keys=True, allow_nan=False
    )

    same = RunDir(tmp_path / "same")
    write_point(same, plan, "cand", [row for w in range(4) for row in wave_rows(w, 10.0, jitter_ms=1.0)])
    write_point(same, plan, "base", [row for w in range(4) for row in wave_rows(w, 10.0, jitter_ms=1.0)])
    decode = next(
        c for c in summarize_bench(same, plan).model_dump(mode="json")["comparisons"] if c["metric"] == "decode_tok_s"
    )
    assert decode["ratio"] == pytest.approx(1.0) and decode["within_noise"] is True


def test_validity_reasons_are_recorded_not_dropped(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    rows = [row for w in range(4) for row in wave_rows(w, 10.0)]
    rows[0].n_out, rows[0].chunk_t_ns, rows[0].chunk_tokens = 4, rows[0].chunk_t_ns[:4], [1] * 4  # short answer
    rows[1].n_in = 5  # prompt one token too long
    rows[2].error, rows[2].chunk_t_ns, rows[2].chunk_tokens, rows[2].n_out = "HTTP 500: boom", [], [], 0
    write_point(
        run_dir,
        plan,
        "base",
        rows,
        counter_deltas={"vllm:generation_tokens_total": 99.0, "vllm:prefix_cache_hits_total": 16.0},
    )
    (point,) = [p for p in summarize_bench(run_dir, plan).model_dump(mode="json")["points"] if p["server"] == "base"]
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
    reasons = {
        name: next(p for p in summarize_bench(d, plan).model_dump(mode="json")["points"] if p["server"] == "base")[
            "invalid_reasons"
        ]
        for name, d in (("ok", ok), ("late", late), ("busy", busy))
    }
    assert reasons["ok"] == []
    assert reasons["late"] == [
        "client saturated: event-loop lag P99 4.0 ms is over 25% of the median ITL (limit 2.5 ms)"
    ]
    assert reasons["busy"] == ["client saturated: it used 97% of a core (limit 90%)"]


def spec_wave(wave: int) -> list[RequestRow]:
    """B = 2, 12 tokens each, ngram-like chunks: request 0 gains 1,3,1,3,1,3 tokens per 10 ms step, request 1
    1,1,3,3,1,3."""
    rows = []
    base = wave * 10_000 * MS
    for r, ks in enumerate(([1, 3, 1, 3, 1, 3], [1, 1, 3, 3, 1, 3])):
        first = 100 + 5 * r
        times = [int(base + (first + 10 * i) * MS) for i in range(len(ks))]
        rows.append(
            RequestRow(
                request_index=wave * 2 + r,
                wave=wave,
                warmup=False,
                expected_n_in=4,
                t_send_ns=base,
                chunk_t_ns=times,
                chunk_tokens=ks,
                n_in=4,
                n_out=12,
            )
        )
    return rows


SPEC_PLAN = PLAN.replace("osl: [5]", "osl: [12]")


def test_speculative_point_al_coverage_and_crosscheck(tmp_path: Path) -> None:
    plan = parse_plan(SPEC_PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    rows = [row for w in range(4) for row in spec_wave(w)]
    # measured waves: 96 tokens, 32 accepted in 16 drafts of 2 tokens (positions 0: 16, 1: 16); 64 request-steps
    measured = {
        "vllm:generation_tokens_total": 96.0,
        "vllm:spec_decode_num_drafts_total": 16.0,
        "vllm:spec_decode_num_accepted_tokens_total": 32.0,
        "vllm:spec_decode_num_accepted_tokens_per_pos_total": [16.0, 16.0],
    }
    # the whole point (warm-up included) says something else: the measured deltas win
    whole = {**measured, "vllm:spec_decode_num_drafts_total": 40.0, "vllm:generation_tokens_total": 96.0}
    write_point(run_dir, plan, "base", rows, counter_deltas=whole, measured_counter_deltas=measured)
    (point,) = [p for p in summarize_bench(run_dir, plan).model_dump(mode="json")["points"] if p["server"] == "base"]
    metrics = point["metrics"]
    assert metrics["acceptance_length"] == pytest.approx(3.0)
    assert metrics["acceptance_length_ci"] == pytest.approx([3.0, 3.0])  # every draft accepted both tokens
    assert metrics["acceptance_per_position"] == pytest.approx([1.0, 1.0])
    assert metrics["acceptance_per_position_ci"][0][1] == pytest.approx(1.0)
    assert metrics["draft_coverage"] == pytest.approx(16 / 64)
    assert metrics["tokens_per_request_step"] == pytest.approx(96 / 64)
    # window per wave [105, 150] ms. In (105, 150]: request 0's chunks 110(3) 120(1) 130(3) 140(1) 150(3) = 11 tokens
    # in 5 chunks; request 1's 115(1) 125(3) 135(3) 145(1) = 8 tokens in 4 chunks -> 4.5 steps per wave
    assert metrics["tokens_in_window"] == 4 * 19
    assert metrics["decode_steps"] == pytest.approx(4 * 4.5)
    assert metrics["decode_step_s"] == pytest.approx(0.045 / 4.5)
    # the PR's conversion: steps/s x AL x B = 100 x 3 x 2 = 600 tok/s against 19 / 45 ms = 422 tok/s measured
    assert metrics["crosscheck_decode_tok_s"] == pytest.approx(600.0)
    assert metrics["crosscheck_ratio"] == pytest.approx(600.0 / (19 / 0.045))
    # = AL / tokens per step per request in the window
    assert metrics["crosscheck_ratio"] == pytest.approx(3.0 / (19 / 9))


def power_trace(throttle_at_s: float | None = None, reason: int = 0x4, sm_clock_mhz: int = 1980) -> PowerTrace:
    """One GPU at a constant 300 W for 40 s, sampled at 10 Hz, with its energy counter; ``reason``
    (default SwPowerCap) set at one time."""
    t = [i * 100 * MS for i in range(401)]
    reasons = [[reason if throttle_at_s is not None and abs(ti / 1e9 - throttle_at_s) < 0.05 else 0x0] for ti in t]
    return PowerTrace(
        available=True,
        gpu_indices=[0],
        gpu_names=["NVIDIA H200"],
        interval_s=0.1,
        energy_source="counter",
        power_limit_w=[700.0],
        t_ns=t,
        power_w=[[300.0]] * len(t),
        energy_mj=[[300.0 * ti / 1e6] for ti in t],
        sm_clock_mhz=[[sm_clock_mhz]] * len(t),
        mem_clock_mhz=[[3201]] * len(t),
        clock_event_reasons=reasons,
        temperature_c=[[50]] * len(t),
        errors=[],
    )


def test_energy_per_token_over_the_decode_windows_and_the_throttle_flag(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    rows = [row for w in range(4) for row in wave_rows(w, 10.0)]
    calm, hot = RunDir(tmp_path / "calm"), RunDir(tmp_path / "hot")
    write_point(calm, plan, "base", rows, power=power_trace())
    write_point(hot, plan, "base", rows, power=power_trace(throttle_at_s=20.1))  # inside wave 2
    calm_point = next(p for p in summarize_bench(calm, plan).model_dump(mode="json")["points"] if p["server"] == "base")
    power = calm_point["metrics"]["power"]
    # 4 windows of 35 ms at 300 W = 42 J for 28 tokens
    assert power["available"] and power["energy_source"] == "counter" and power["window"] == "decode"
    assert power["energy_j"] == pytest.approx(42.0)
    assert power["j_per_token"] == pytest.approx(1.5)
    assert power["mean_power_w"] == pytest.approx(300.0)
    assert power["sm_clock_mhz"] == {"mean": pytest.approx(1980.0), "min": 1980.0}
    assert power["throttle"] == {} and calm_point["valid"]
    capped_point = next(
        p for p in summarize_bench(hot, plan).model_dump(mode="json")["points"] if p["server"] == "base"
    )
    assert capped_point["metrics"]["power"]["throttle"]["SwPowerCap"] > 0
    assert capped_point["valid"], capped_point["invalid_reasons"]  # the power cap is a condition, recorded
    thermal = RunDir(tmp_path / "thermal")
    write_point(thermal, plan, "base", rows, power=power_trace(throttle_at_s=20.1, reason=0x40))
    hot_point = next(
        p for p in summarize_bench(thermal, plan).model_dump(mode="json")["points"] if p["server"] == "base"
    )
    assert hot_point["valid"] is False
    assert hot_point["invalid_reasons"][0].startswith(
        "GPU clocks slowed by heat or hardware during the point (HwThermal"
    )


def test_an_ab_at_different_sm_clocks_is_flagged_not_invalidated(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    rows = [row for w in range(4) for row in wave_rows(w, 10.0, jitter_ms=1.0)]
    slow, same = RunDir(tmp_path / "slow"), RunDir(tmp_path / "same")
    write_point(slow, plan, "cand", rows, power=power_trace(sm_clock_mhz=1860))
    write_point(slow, plan, "base", rows, power=power_trace(sm_clock_mhz=1980))
    write_point(same, plan, "cand", rows, power=power_trace(sm_clock_mhz=1950))  # -1.5%: inside the gap
    write_point(same, plan, "base", rows, power=power_trace(sm_clock_mhz=1980))
    flagged = summarize_bench(slow, plan).model_dump(mode="json")
    assert all(p["valid"] for p in flagged["points"])
    assert flagged["comparisons"] and all(
        "mean SM clock 1860 vs 1980 MHz (-6.1%" in c["conditions"] for c in flagged["comparisons"]
    )
    assert all("conditions" not in c for c in summarize_bench(same, plan).model_dump(mode="json")["comparisons"])


def test_each_woken_wave_is_set_against_the_median_continued_wave_in_visit_order() -> None:
    import numpy as np

    from byog.analysis.bench_summary import Unit, woken_and_continued, woken_wave_ratios

    def wave(seq: int, tok_s: float) -> Unit:
        unit = Unit(np.array([]), np.array([]), np.array([]), (0, 1_000_000_000), int(tok_s), 1.0, int(tok_s))
        unit.seq = seq
        return unit

    # side A of 8 ABBA blocks visits 0, 3, 4, 7, 8, 11, 12, 15: woken 0, 3, 7, 11, 15, continued 4, 8, 12
    speeds = {0: 90, 3: 95, 4: 100, 7: 100, 8: 90, 11: 105, 12: 110, 15: 80}
    units = [wave(seq, speeds[seq]) for seq in (15, 0, 3, 4, 7, 8, 11, 12)]
    woken, continued = woken_and_continued(units)
    assert sorted(u.seq or 0 for u in woken) == [0, 3, 7, 11, 15] and sorted(u.seq or 0 for u in continued) == [
        4,
        8,
        12,
    ]
    assert woken_wave_ratios(units, "batch") == pytest.approx([0.9, 0.95, 1.0, 1.05, 0.8])
    assert woken_wave_ratios([u for u in units if u.seq in (0, 3)], "batch") == []  # no continued wave to hold against
