"""The agentic workload and the Mooncake trace on the real CPU vLLM, prefix cache on: what reuse really does.

On the session's server (tests/support/session_server.py: SmolLM2-135M, eager, ``--block-size 32``
so a 32-token hash block of the trace is one KV block, ``--enable-prompt-tokens-details`` so every
turn reports its cached tokens); every prompt here is new to it. Pinned, against the server's own
counts:

- each turn's prompt is the previous prompt + its answer + new input (the server counts it);
- every later turn and every sub-agent's first turn is served from the cache for exactly the whole
  32-token blocks of what it resends (its context, less the answer's last token, whose KV is never
  computed); the point's hit rate is > 0 by usage and by /metrics and below the ideal share;
- a later turn's TTFT is printed beside a cold prompt's of the same length (pytest -s; the figures
  live in benchmarks/agentic_table.py): one run's time against another's depends on the box's load,
  so the tests hold the server's own counts, not the times;
- the trace's hash blocks become shared tokens: a later turn of a trace session is served from the
  cache for the blocks the trace says it shares, and requests sent after the first one finished
  reuse at least the system block every line of the conversation trace starts with.
"""

from __future__ import annotations

import json
import statistics
import uuid
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest

from byog.analysis.bench_summary import summarize_bench
from byog.bench.prompts import random_token_ids
from byog.bench.sweep import run_bench_for_server
from byog.core.io import atomic_write_text
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.plans.load import parse_plan
from byog.schemas.bench import read_request_rows
from tests.support.session_server import KV_BLOCK, SESSION_SERVER_ARGS

pytestmark = pytest.mark.integration

# Two sessions in Mooncake's format, written for this test: at x2 the later turns go out 15 s apart,
# long after their predecessors (~3 s each here) finished, so each must find its context cached. (The
# shipped sample's later turns come 2-36 s after six concurrent first turns that take ~50 s on 2 cores.)
TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "mooncake" / "two-sessions.jsonl"
PLAN = f"""
name: agentic-real
model: {{path: builtin:smollm2-135m-instruct, max_model_len: 4096}}
servers:
  cpu: {{runtime: local, args: {json.dumps(SESSION_SERVER_ARGS)}}}
baseline: cpu
workloads:
  - kind: agentic
    name: agentic
    concurrencies: [1]
    sessions: 3
    warmup_sessions: 0
    slo: {{ttft_s: 5.0, tpot_s: 0.5}}
    source:
      kind: synthetic
      turns: {{kind: constant, value: 3}}
      shared_prefix_tokens: 200
      first_input_tokens: {{kind: constant, value: 60}}
      input_tokens: {{kind: uniform, min: 20, max: 40}}
      output_tokens: {{kind: constant, value: 12}}
      think_time_s: {{kind: constant, value: 0.05}}
      fanout: {{probability: 1.0, width: {{kind: constant, value: 2}}, turns: {{kind: constant, value: 2}},
               input_tokens: {{kind: constant, value: 20}}}}
  - kind: agentic
    name: mooncake
    source: {{kind: trace, trace: "{TRACE}", block_tokens: {KV_BLOCK}, speedups: [2]}}
"""


@pytest.fixture(scope="module")
def measured(cpu_server: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, Any, Any]:
    """The plan's server 'cpu' is the session's (the plan says its flags, for the run directory)."""
    plan = parse_plan(PLAN, "agentic test plan")
    run_dir = RunDir(tmp_path_factory.mktemp("agentic") / "run")
    atomic_write_text(run_dir.plan_yaml, PLAN)
    result = run_bench_for_server(plan, "cpu", cpu_server, run_dir, NullReporter())
    assert result["failed"] == [] and result["aborted"] is None, result
    return run_dir, plan, cpu_server.endpoint


def _cold_ttft_s(endpoint: Any, n_in: int, seed: int) -> float:
    """TTFT of a fresh random prompt of n_in tokens under its own cache salt: nothing of it is cached."""
    import time

    prompt = random_token_ids(1, n_in, 49152, [seed, n_in])[0]
    body = {
        "model": endpoint.model,
        "prompt": prompt,
        "max_tokens": 2,
        "min_tokens": 2,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "cache_salt": uuid.uuid4().hex,
    }
    t0 = time.perf_counter()
    with httpx.stream("POST", endpoint.base_url + "/v1/completions", json=body, timeout=120) as response:
        for line in response.iter_lines():
            if line.startswith("data:") and '"text"' in line:
                return time.perf_counter() - t0
    raise AssertionError("no token")


def test_context_grows_and_the_cache_serves_every_resent_block(measured: tuple[RunDir, Any, Any]) -> None:
    run_dir, _, _ = measured
    rows = read_request_rows(run_dir.bench_rows("cpu", "agentic-c1"))
    assert rows and all(r.error is None for r in rows), [r.error for r in rows if r.error][:3]
    assert all(r.n_in == r.expected_n_in and r.n_out == r.expected_n_out for r in rows)  # the server's own counts
    assert all(r.cached_tokens is not None for r in rows)
    forks = 0
    for session in {r.session for r in rows}:
        main = sorted((r for r in rows if r.session == session and r.agent == 0), key=lambda r: r.turn or 0)
        assert [r.turn for r in main] == [0, 1, 2]
        for a, b in pairwise(main):
            assert b.n_in is not None and a.n_in is not None and b.n_in > a.n_in + a.n_out  # + answer + new input
    for r in rows:
        if (r.turn or 0) >= 1 or (r.agent or 0) >= 1:  # its context was complete in the cache before it was sent
            assert r.reusable_tokens is not None and r.cached_tokens is not None
            assert r.cached_tokens == KV_BLOCK * ((r.reusable_tokens - 1) // KV_BLOCK), (r.session, r.agent, r.turn)
            forks += (r.agent or 0) >= 1 and r.turn == 0
    assert forks == 3 * 2 * 2  # 3 sessions forked 2 sub-agents after each turn but the last, all from the cache


def test_hit_rates_and_ttft_by_turn(measured: tuple[RunDir, Any, Any]) -> None:
    run_dir, plan, endpoint = measured
    (point,) = [p for p in summarize_bench(run_dir, plan).points if p.point_id == "agentic-c1"]
    assert [r for r in point.invalid_reasons if not r.startswith("client saturated")] == []
    s = point.sessions
    assert s is not None and s.sessions == s.sessions_complete == 3 and s.subagent_turns == 3 * 2 * 2 * 2
    assert s.prefix_hit_rate is not None and s.prefix_hit_rate_counters is not None and s.reusable_share is not None
    assert 0.5 < s.prefix_hit_rate < s.reusable_share  # whole blocks only, below what an ideal cache could serve
    assert s.prefix_hit_rate_counters > 0.3
    assert [t.turn for t in s.ttft_s_by_turn] == [0, 1, 2] and all(t.n == 3 for t in s.ttft_s_by_turn)
    assert point.metrics is not None and point.metrics.tok_s_user.p90 is not None
    assert point.goodput is not None and point.goodput.measured == s.turns
    # TTFT of the last main-agent turns (one session in flight and its sub-agents joined: nothing else
    # runs) against cold prompts of the same lengths, sent now, one at a time, under fresh cache salts
    rows = [r for r in read_request_rows(run_dir.bench_rows("cpu", "agentic-c1")) if r.agent == 0 and r.turn == 2]
    cached = statistics.median((r.t_first_ns - r.t_send_ns) / 1e9 for r in rows)
    cold = statistics.median(_cold_ttft_s(endpoint, r.n_in or 1, i) for i, r in enumerate(rows))
    print(f"\nlast main-agent turns: TTFT {cached * 1e3:.0f} ms cached, {cold * 1e3:.0f} ms cold (same lengths)")


def test_trace_hash_blocks_become_shared_prefixes(measured: tuple[RunDir, Any, Any]) -> None:
    run_dir, plan, _ = measured
    rows = read_request_rows(run_dir.bench_rows("cpu", "mooncake-x2"))
    assert len(rows) == 5 and all(r.error is None and r.n_in == r.expected_n_in for r in rows)
    assert all(r.cached_tokens is not None and r.reusable_tokens is not None for r in rows)
    assert all((r.cached_tokens or 0) <= (r.reusable_tokens or 0) for r in rows)  # no hit the trace does not share
    first_done = min(r.t_last_ns for r in rows)
    later = [
        r
        for r in rows
        if r.turn and r.t_send_ns > max(p.t_last_ns for p in rows if p.session == r.session and (p.turn or 0) < r.turn)
    ]
    assert len(later) == 3  # every later turn went out after every earlier turn of its session had finished
    for r in later:  # the whole blocks the trace says it shares with an earlier request are served from the cache
        assert r.cached_tokens is not None and r.reusable_tokens is not None
        assert r.cached_tokens >= r.reusable_tokens - KV_BLOCK > 0, (r.session, r.turn)
    for r in rows:
        if r.t_send_ns > first_done:  # the system block every line starts with was in the cache
            assert (r.cached_tokens or 0) >= KV_BLOCK
    (point,) = [p for p in summarize_bench(run_dir, plan).points if p.point_id == "mooncake-x2"]
    s = point.sessions
    assert s is not None and s.prefix_hit_rate is not None and 0 < s.prefix_hit_rate <= (s.reusable_share or 0)
