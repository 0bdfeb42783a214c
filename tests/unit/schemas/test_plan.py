"""The plan schema's launch rule: R launches of a server with bench points, one of a server with evals only."""

from __future__ import annotations

import pytest

from byog.core.errors import PlanProblems
from byog.pipeline.run import launch_rounds
from byog.plans.expand import points_for_server
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


def test_a_workload_on_fewer_launches_runs_on_the_first_only_and_its_servers_start_as_often_as_needed() -> None:
    text = PLAN.replace(
        "workloads:\n",
        "workloads:\n  - {kind: batch, name: long, launches: 1, servers: [cand-spec, stock-spec, cand], "
        "batch_sizes: [1], isl: [64], osl: [8]}\n",
    )
    plan = parse_plan(text, "t.yaml")
    # cand runs 'batch' on both launches and 'long' on its first; the spec pair runs only 'long': once
    assert {name: plan.launches_of(name) for name in plan.servers} == {
        "stock": 2,
        "cand": 2,
        "cand-spec": 1,
        "stock-spec": 1,
    }
    assert [p.point_id for p in points_for_server(plan, "cand", 2)] == ["batch-b1-isl8-osl8"]
    assert [p.point_id for p in points_for_server(plan, "cand", 1)] == ["long-b1-isl64-osl8", "batch-b1-isl8-osl8"]
    assert (plan.measured_on("long", "cand", 1), plan.measured_on("long", "cand", 2)) == (True, False)
    assert [(r, name) for r, name in launch_rounds(plan) if r == 2] == [(2, "cand"), (2, "stock")]


def test_a_workload_cannot_ask_for_more_launches_than_the_plan_or_split_an_interleaved_pair() -> None:
    more = PLAN.replace("workloads:\n  - {kind: batch,", "workloads:\n  - {kind: batch, launches: 3,")
    with pytest.raises(PlanProblems, match="asks for 3 launches but the plan has 2"):
        parse_plan(more, "t.yaml")
    interleaved = PLAN.replace(
        "- {candidate: cand, baseline: stock}", "- {candidate: cand, baseline: stock, interleave: true}"
    ).replace("workloads:\n  - {kind: batch,", "workloads:\n  - {kind: batch, launches: 1,")
    with pytest.raises(PlanProblems, match="sets its own launches on a server of an interleaved pair"):
        parse_plan(interleaved, "t.yaml")
