"""The plan schema's launch rule: R launches of a server with bench points, one of a server with evals only."""

from __future__ import annotations

from byog.pipeline.run import launch_rounds
from byog.plans.load import parse_plan

PLAN = """
name: t
model: {path: m}
servers: {stock: {}, cand: {}, cand-spec: {}, stock-spec: {}}
baseline: stock
pairs:
  - {candidate: cand, baseline: stock}
  - {candidate: cand-spec, baseline: stock-spec}
workloads:
  - {kind: batch, servers: [cand, stock], batch_sizes: [1], isl: [8], osl: [8]}
evals:
  - {task: gsm8k, limit: 10}
launches: 2
"""


def test_a_server_no_workload_measures_starts_once_and_the_others_r_times() -> None:
    """Evals run on the first launch only: a second launch of an eval-only server would start it for nothing."""
    plan = parse_plan(PLAN, "t.yaml")
    assert {name: plan.launches_of(name) for name in plan.servers} == {
        "stock": 2,
        "cand": 2,
        "cand-spec": 1,
        "stock-spec": 1,
    }
    assert [(r, name) for r, name in launch_rounds(plan) if r == 2] == [(2, "cand"), (2, "stock")]
    aa = parse_plan(PLAN.replace("launches: 2", "aa_pair: true"), "t.yaml")
    assert (aa.launches_of("stock"), aa.launches_of("stock-spec")) == (2, 1)  # the A/A pair is about bench points
