"""The bench formulas on hand-computed timestamps (ms below are written as ns in the traces)."""

from __future__ import annotations

import math

import pytest

from byog.analysis import counters as sm
from byog.analysis import metrics as m
from byog.schemas.bench import RequestRow
from tests.support import metrics_oracle as oracle

MS = 1_000_000  # ns


def trace(send_ms: float, chunks: list[tuple[float, int]], n_in: int = 4) -> RequestRow:
    times = [int(t * MS) for t, _ in chunks]
    tokens = [k for _, k in chunks]
    return RequestRow(
        request_index=0,
        wave=0,
        warmup=False,
        expected_n_in=n_in,
        t_send_ns=int(send_ms * MS),
        chunk_t_ns=times,
        chunk_tokens=tokens,
        n_in=n_in,
        n_out=sum(tokens),
    )


def test_ttft_tpot_single_token_chunks() -> None:
    # sent at 0, first token at 100 ms, then 4 more tokens at 120, 140, 160, 180 ms.
    r = trace(0, [(100, 1), (120, 1), (140, 1), (160, 1), (180, 1)])
    assert m.ttft_s(r) == pytest.approx(0.100)
    assert m.tpot_s(r) == pytest.approx(0.080 / 4)  # (180 - 100) / (5 - 1)
    assert m.itl_s(r) == pytest.approx([0.020] * 4)
    assert oracle.itl_mean_s(r) == pytest.approx(0.020)
    assert m.e2e_latency_s(r) == pytest.approx(0.180)


def test_speculative_chunk_of_k_tokens_counts_k_tokens() -> None:
    # first token at 50 ms; a chunk of 3 tokens 30 ms later; then a chunk of 1 token 10 ms later.
    r = trace(10, [(50, 1), (80, 3), (90, 1)])
    assert r.n_out == 5
    assert m.ttft_s(r) == pytest.approx(0.040)
    assert m.tpot_s(r) == pytest.approx(0.040 / 4)  # (90 - 50) / (5 - 1)
    assert m.itl_s(r) == pytest.approx([0.010, 0.010, 0.010, 0.010])  # 30/3 three times, then 10/1
    pooled = m.pooled_itl_s([r, trace(0, [(10, 1), (30, 1)])])
    assert pooled == pytest.approx([0.010] * 4 + [0.020])


def test_first_chunk_with_two_tokens_changes_itl_mean_not_tpot() -> None:
    r = trace(0, [(100, 2), (130, 1), (160, 1)])  # n_out = 4
    assert m.tpot_s(r) == pytest.approx(0.060 / 3)
    assert oracle.itl_mean_s(r) == pytest.approx(0.060 / 2)  # (t_last - t_first) / (n_out - k_first)


def test_too_short_or_failed_requests_give_none() -> None:
    assert m.tpot_s(trace(0, [(5, 1)])) is None
    failed = RequestRow(request_index=0, wave=0, warmup=False, expected_n_in=4, error="HTTP 500")
    assert m.ttft_s(failed) is None and m.itl_s(failed) == []


def test_wave_decode_window_and_tokens_inside_it() -> None:
    # B = 2. Request A: first token at 100, tokens every 10 ms up to 200 (11 chunks).
    # Request B: first token at 130 (prefilled later), tokens every 10 ms up to 250.
    a = trace(0, [(100 + 10 * i, 1) for i in range(11)])
    b = trace(0, [(130 + 10 * i, 1) for i in range(13)])
    window = oracle.decode_window_ns([a, b])
    assert window == (130 * MS, 200 * MS)  # [max t_first, min t_last]
    # (130, 200]: A has chunks 140..200 = 7 tokens; B has 140..200 = 7 tokens (its 130 chunk is prefill).
    assert oracle.tokens_in_window([a, b], window) == 14
    assert m.decode_tok_s(14, 0.070) == pytest.approx(200.0)


def test_wave_window_counts_speculative_chunks_by_tokens() -> None:
    a = trace(0, [(100, 1), (120, 4), (140, 4), (160, 4)])
    b = trace(0, [(110, 1), (130, 4), (150, 4), (170, 4)])
    window = oracle.decode_window_ns([a, b])
    assert window == (110 * MS, 160 * MS)
    assert oracle.tokens_in_window([a, b], window) == 4 * 3 + 4 * 2  # A: 120,140,160; B: 130,150


def test_empty_window_when_a_request_ends_before_another_starts() -> None:
    a = trace(0, [(10, 1), (20, 1)])
    b = trace(0, [(30, 1), (40, 1)])
    assert oracle.decode_window_ns([a, b]) is None


def test_decode_steps_step_time_and_crosscheck() -> None:
    # 600 tokens in a 1.5 s window at B = 4, every request gaining 3 tokens per step: 50 steps, 30 ms each.
    assert m.decode_step_s(1.5, 50) == pytest.approx(0.030)
    assert m.crosscheck_decode_tok_s(1 / 0.030, 3.0, 4) == pytest.approx(400.0)  # = 600 / 1.5
    assert m.decode_step_s(1.0, 0) is None


def test_steps_in_window_count_chunks_per_request() -> None:
    # A: chunks at 120, 140, 160 (3 steps in the window); B: 130, 150 (2, its 170 is after the end)
    a = trace(0, [(100, 1), (120, 4), (140, 2), (160, 4)])
    b = trace(0, [(110, 1), (130, 1), (150, 4), (170, 4)])
    window = oracle.decode_window_ns([a, b])
    assert window == (110 * MS, 160 * MS)
    assert oracle.steps_in_window([a, b], window) == pytest.approx(2.5)
    assert oracle.steps_in_window([], window) == 0.0


def test_coverage_and_tokens_per_request_step() -> None:
    # 512 tokens generated, 231 of them accepted drafts: 281 (request, step) pairs; 117 drafts.
    assert m.request_steps(512, 231) == 281
    assert m.draft_coverage(117, 512, 231) == pytest.approx(117 / 281)
    assert m.tokens_per_request_step(512, 231) == pytest.approx(512 / 281)
    al = m.acceptance_length(231, 117)
    assert al is not None
    # tokens per request-step = 1 + (AL - 1) x coverage
    assert m.tokens_per_request_step(512, 231) == pytest.approx(1 + (al - 1) * 117 / 281)
    assert m.draft_coverage(0, 0, 0) is None and m.tokens_per_request_step(5, 5) is None


def test_acceptance_length_ci_from_prefix_counts() -> None:
    # every draft accepts exactly 2 of 3 (synthetic-like): X = 2 always, zero variance
    assert m.acceptance_length_ci([100, 100, 0], 100) == pytest.approx((3.0, 3.0))
    # X in {0, 1} with P(1) = 0.5 over 100 drafts: AL 1.5, sd 0.5, SE 0.05
    low, high = m.acceptance_length_ci([50, 0], 100) or (0, 0)
    assert (low, high) == pytest.approx((1.5 - 1.96 * 0.05, 1.5 + 1.96 * 0.05))
    # X = 0 (40), 1 (30), 2 (30): P(X>=1) = .6, P(X>=2) = .3; E[X] = .9, E[X^2] = .6 + 3 x .3 = 1.5
    low, high = m.acceptance_length_ci([60, 30], 100) or (0, 0)
    var = 1.5 - 0.81
    assert (low + high) / 2 == pytest.approx(1.9)
    assert high - low == pytest.approx(2 * 1.96 * (var / 100) ** 0.5)
    assert m.acceptance_length_ci([], 0) is None


def test_wilson_interval() -> None:
    low, high = m.wilson_interval(50, 100) or (0, 0)
    assert (low + high) / 2 == pytest.approx(0.5)
    assert high - low == pytest.approx(0.192, abs=0.002)
    low, high = m.wilson_interval(100, 100) or (0, 0)
    assert high == pytest.approx(1.0) and 0.95 < low < 1.0
    assert m.wilson_interval(0, 100)[0] == 0.0  # type: ignore[index]
    assert m.wilson_interval(1, 0) is None


def test_acceptance_length_and_per_position() -> None:
    # 100 drafts of 3 tokens; accepted 80 at position 0, 50 at 1, 20 at 2 -> 150 accepted.
    assert m.acceptance_length(150, 100) == pytest.approx(2.5)
    per_pos = m.acceptance_per_position([80, 50, 20], 100)
    assert per_pos == pytest.approx([0.8, 0.5, 0.2])
    assert 1 + sum(per_pos) == pytest.approx(m.acceptance_length(150, 100))
    assert m.acceptance_length(0, 0) is None


def test_percentiles_match_numpy_linear() -> None:
    values = [0.010, 0.020, 0.030, 0.040, 0.100]
    assert m.percentile(values, 50) == pytest.approx(0.030)
    assert m.percentile(values, 90) == pytest.approx(0.040 + 0.6 * 0.060)  # pos 3.6
    assert m.percentile(values, 99) == pytest.approx(0.040 + 0.96 * 0.060)  # pos 3.96
    assert m.percentile([], 50) is None
    assert m.percentile([1.0, float("nan")], 50) == 1.0


def test_p90_interactivity_is_the_slowest_ten_percent() -> None:
    tpots = [0.010] * 9 + [0.050]  # nine fast users, one slow
    stats = m.interactivity_stats(tpots)
    p90_tpot = m.percentile(tpots, 90)
    assert p90_tpot == pytest.approx(0.014)  # pos 8.1 between 0.010 and 0.050
    assert stats["p90"] == pytest.approx(1 / 0.014)  # 1 / P90(tpot), below the median rate
    assert stats["p50"] == pytest.approx(100.0)
    assert stats["p90"] < stats["p50"]
    assert stats["mean"] == pytest.approx((9 * 100 + 20) / 10)


def test_output_throughput_and_achieved_concurrency() -> None:
    a = trace(0, [(100, 1), (200, 1)])
    b = trace(100, [(250, 1), (300, 1)])
    assert m.output_tok_s([a, b]) == pytest.approx(4 / 0.300)
    # in flight: a over [0, 200], b over [100, 300] -> busy 400 ms over [0, 300] = 1.333
    assert oracle.achieved_concurrency([a, b], 0, 300 * MS) == pytest.approx(400 / 300)


PROM_BEFORE = """# HELP vllm:generation_tokens_total x
vllm:generation_tokens_total{engine="0",model_name="m"} 100.0
vllm:generation_tokens_total{engine="1",model_name="m"} 50.0
vllm:spec_decode_num_drafts_total{engine="0"} 10.0
vllm:spec_decode_num_accepted_tokens_total{engine="0"} 12.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 8.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 4.0
vllm:iteration_tokens_total_count{engine="0"} 7.0
"""
PROM_AFTER = (
    PROM_BEFORE.replace(" 100.0", " 400.0")
    .replace("} 10.0", "} 110.0")
    .replace("} 12.0", "} 162.0")
    .replace('position="0"} 8.0', 'position="0"} 98.0')
    .replace('position="1"} 4.0', 'position="1"} 64.0')
)


def test_counter_deltas_from_prometheus_snapshots() -> None:
    deltas = sm.counter_deltas(PROM_BEFORE, PROM_AFTER)
    assert deltas[sm.GENERATION_TOKENS] == 300.0  # summed over engines: 450 - 150
    assert deltas[sm.SPEC_DRAFTS] == 100.0
    assert deltas[sm.SPEC_ACCEPTED] == 150.0
    assert deltas[sm.SPEC_ACCEPTED_PER_POS] == [90.0, 60.0]
    assert deltas[sm.ITERATIONS] == 0.0
    assert sm.PREFIX_CACHE_HITS not in deltas  # not exported = not measured, not zero
    assert m.acceptance_length(deltas[sm.SPEC_ACCEPTED], deltas[sm.SPEC_DRAFTS]) == pytest.approx(2.5)
    assert sm.counter_deltas(None, PROM_AFTER) == {}
    assert not math.isnan(deltas[sm.GENERATION_TOKENS])
