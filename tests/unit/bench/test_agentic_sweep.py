"""Agentic points, a replayed trace and a rate search through the real sweep, summary and report, on the loopback fake.

The fake streams vLLM's SSE shape (with ``token_ids`` when asked), so everything but the model is
real: the plan is expanded, the sweep writes rows and records, a rerun resumes (the search too),
the summary is recomputed twice to the same bytes, and the report gains its sections.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from byog.analysis.bench_summary import summarize_bench
from byog.bench.ceiling import FakeConfig, FakeServerThread
from byog.bench.sweep import run_bench_for_server
from byog.core.io import atomic_write_text
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.report.agentic import (
    agentic_section,
    frontier_groups,
    frontier_section,
    goodput_section,
    write_frontier_plots,
)
from byog.schemas.bench import read_request_rows
from byog.schemas.evals import EvalSummary
from byog.schemas.summary import Summary, SummaryPlan
from tests.support.sweep import FakeRunning

# a real bench against a loopback fake: its timing is this box's (scripts/test.sh runs these alone)
pytestmark = pytest.mark.serial

PLAN = """
name: agentic-fake
model: {path: /m, max_model_len: 1024}
servers:
  cand: {runtime: endpoint, url: "http://unused"}
  base: {runtime: endpoint, url: "http://unused"}
baseline: base
workloads:
  - kind: agentic
    name: agent
    concurrencies: [1, 2]
    sessions: 3
    warmup_sessions: 1
    slo: {ttft_s: 5.0, tpot_s: 1.0}
    source:
      kind: synthetic
      turns: {kind: uniform, min: 2, max: 3}
      shared_prefix_tokens: 32
      first_input_tokens: {kind: constant, value: 20}
      input_tokens: {kind: uniform, min: 5, max: 9}
      output_tokens: {kind: constant, value: 6}
      think_time_s: {kind: constant, value: 0.01}
      fanout: {probability: 1.0, width: {kind: constant, value: 2}, turns: {kind: constant, value: 1},
               input_tokens: {kind: constant, value: 4}}
  - kind: agentic
    name: trace
    source: {kind: trace, block_tokens: 8, speedups: [400], max_requests: 10}
  - kind: rate
    name: search
    isl: [8]
    osl: [4]
    num_prompts: 4
    slo: {ttft_s: 5.0, target_share: 0.75}
    search: {start_rate: 20, max_probes: 3}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, object]:
    plan = parse_plan(PLAN, "test")
    run_dir = RunDir(tmp_path_factory.mktemp("agentic") / "run")
    atomic_write_text(run_dir.plan_yaml, PLAN)
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:
        for name in plan.servers:
            result = run_bench_for_server(plan, name, FakeRunning(fake.base_url, name), run_dir, NullReporter())
            assert result["failed"] == [] and result["aborted"] is None
        again = run_bench_for_server(plan, "cand", FakeRunning(fake.base_url, "cand"), run_dir, NullReporter())
    return run_dir, (plan, again)


def test_points_are_expanded_and_resumed(run: tuple[RunDir, object]) -> None:
    run_dir, (plan, again) = run  # type: ignore[misc]
    ids = [p.point_id for p in expand_plan(plan)]
    assert ids == ["agent-c1", "agent-c2", "trace-x400"]  # a search's probes are not known before running
    # the rerun skips every point, and the search, reading its 3 probes from disk, asks for no new one
    assert again["run"] == [] and again["skipped"] == ids
    assert sorted(p for p in run_dir.bench_point_ids("cand") if p.startswith("search")) == [
        "search-r20-isl8-osl4",
        "search-r40-isl8-osl4",
        "search-r80-isl8-osl4",
    ]


def test_agentic_rows_carry_the_session_structure(run: tuple[RunDir, object]) -> None:
    run_dir, _ = run
    rows = read_request_rows(run_dir.bench_rows("cand", "agent-c2"))
    record = json.loads(run_dir.bench_point("cand", "agent-c2").read_text())
    assert record["schema_version"] == 4 and record["point"]["max_context"] == 1024  # the plan's model context
    assert all(r.error is None and r.n_out == r.expected_n_out == 6 for r in rows)
    assert {r.session for r in rows if r.warmup} == {1_000_000} and {r.session for r in rows if not r.warmup} == {
        0,
        1,
        2,
    }
    subagents = [r for r in rows if r.agent]
    assert subagents and all(r.parent_turn is not None and r.parent_turn >= 0 for r in subagents)
    for session in (0, 1, 2):
        main = sorted((r for r in rows if r.session == session and r.agent == 0), key=lambda r: r.turn or 0)
        for a, b in pairwise(main):  # the context grows by the answer, the sub-agents' answers and new input
            assert b.n_in is not None and a.n_in is not None and b.n_in > a.n_in + a.n_out
            assert b.reusable_tokens == a.n_in + a.n_out
    trace = read_request_rows(run_dir.bench_rows("cand", "trace-x400"))
    assert len(trace) == 10 and all(r.error is None and r.n_out == r.expected_n_out for r in trace)


def test_summary_has_sessions_goodput_and_the_search(run: tuple[RunDir, object]) -> None:
    run_dir, (plan, _) = run  # type: ignore[misc]
    bench = summarize_bench(run_dir, plan)
    assert bench.model_dump(mode="json") == summarize_bench(run_dir, plan).model_dump(mode="json")  # deterministic
    points = {(p.server, p.point_id): p for p in bench.points}
    agent = points[("cand", "agent-c1")]
    hard = [r for r in agent.invalid_reasons if not r.startswith("client saturated")]  # a 1 ms ITL on a busy box
    assert agent.kind == "agentic" and hard == [], hard
    assert agent.sessions is not None and agent.sessions.sessions == 3 and agent.sessions.subagent_turns > 0
    assert [t.turn for t in agent.sessions.ttft_s_by_turn][:2] == [0, 1]
    assert agent.sessions.reusable_share is not None and 0 < agent.sessions.reusable_share < 1
    assert agent.sessions.prefix_hit_rate is None  # the fake reports no cached tokens: not measured, not 0
    assert agent.goodput is not None and agent.goodput.slo_share == 1.0 and agent.goodput.meets_target
    assert agent.metrics is not None and agent.metrics.tok_s_user.p90 is not None
    assert points[("cand", "trace-x400")].speedup == 400 and points[("cand", "trace-x400")].sessions is not None
    (search,) = [s for s in bench.rate_searches if s.server == "cand"]
    assert [p.rate for p in search.probes] == [20, 40, 80] and search.best_rate == 80 and not search.converged
    assert "lower bound" in search.reason
    assert points[("cand", "search-r40-isl8-osl4")].search_probe
    # a comparison pairs the agentic points of both servers like any other point
    assert any(c.point_id == "agent-c1" and c.metric == "tok_s_user.p50" for c in bench.comparisons)
    # summary.json keeps its old keys only when nothing agentic is there
    batch_only = next(p for p in bench.points if p.point_id == "search-r20-isl8-osl4").model_dump(mode="json")
    assert "sessions" not in batch_only and "speedup" not in batch_only and batch_only["search_probe"] is True


def test_report_sections_and_the_frontier_plot(run: tuple[RunDir, object], tmp_path: Path) -> None:
    run_dir, (plan, _) = run  # type: ignore[misc]
    summary = Summary(
        plan=SummaryPlan(name=plan.name, baseline=plan.baseline, candidates=plan.candidates),
        bench=summarize_bench(run_dir, plan),
        evals=EvalSummary(),
    )
    agentic = "\n".join(agentic_section(summary))
    assert "### Agentic sessions" in agentic and "| cand | agent-c2 | C=2 |" in agentic
    goodput = "\n".join(goodput_section(summary))
    assert "### Goodput under the SLO" in goodput and "20: 100.0%, 40: 100.0%, 80: 100.0%" in goodput
    frontier = "\n".join(frontier_section(summary, run_dir))
    assert "### Throughput–interactivity frontier" in frontier
    groups = frontier_groups(summary, {"cand": 1, "base": 1})
    assert {(g.server, g.workload) for g in groups} == {("cand", "agent"), ("base", "agent")}  # 2 loads each
    (png,) = write_frontier_plots(run_dir, summary, tmp_path)
    assert png.name == "frontier-cand-vs-base.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
