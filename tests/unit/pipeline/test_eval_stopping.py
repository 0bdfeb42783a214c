"""``byog plan``'s expected share of eval items under a plan's group-sequential looks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from byog.analysis import group_sequential as gs
from byog.analysis.gate_power import difference_pmf, prior_model
from byog.pipeline.eval_stopping import expected_share
from byog.plans.load import parse_plan

PLAN = """\
name: looks
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  a: {}
  b: {}
  c: {}
baseline: b
pairs:
  - {candidate: a, baseline: b}
workloads:
  - {kind: batch, name: d, batch_sizes: [1], isl: [16], osl: [16]}
evals:
  - {task: gsm8k, limit: 1000, looks: [0.5, 0.75, 1.0]}
"""


def test_only_the_later_server_of_a_pair_stops_early_and_as_the_gate_would() -> None:
    plan = parse_plan(PLAN, "p.yaml")
    spec = plan.evals[0]
    assert expected_share(plan, spec, "a") is None  # the earlier server runs every item
    share = expected_share(plan, spec, "b")
    assert share is not None and share.design == "3 looks, obf" and share.model == "prior"
    model = prior_model("gsm8k")
    assert model is not None
    values, probs = difference_pmf(model, 1, sampled=False)
    assert share.discordance == pytest.approx(float(probs[0] + probs[2]))
    sd = math.sqrt(float(np.dot(values**2, probs)))
    design = gs.SequentialDesign(fractions=(0.5, 0.75, 1.0))
    assert share.identical == pytest.approx(gs.expected_items(1000, design, 3.0, 0.0, sd) / 1000)
    assert 0.5 <= share.identical < 1.0 and 0.5 <= share.at_margin < 1.0


def test_no_looks_no_limit_or_a_task_scored_whole_runs_every_item() -> None:
    for text in (
        PLAN.replace(", looks: [0.5, 0.75, 1.0]", ""),
        PLAN.replace("limit: 1000, ", ""),
        PLAN.replace("task: gsm8k", "task: mrcr"),
    ):
        plan = parse_plan(text, "p.yaml")
        assert expected_share(plan, plan.evals[0], "b") is None


def test_both_sides_of_an_interleaved_pair_stop_early_and_two_pairs_stop_later_than_one() -> None:
    interleaved = parse_plan(PLAN.replace("baseline: b}", "baseline: b, interleave: true}"), "p.yaml")
    shares = [expected_share(interleaved, interleaved.evals[0], s) for s in ("a", "b")]
    assert shares[0] is not None and shares[0] == shares[1]  # in turns, in the same looks: both stop there
    one = parse_plan(PLAN, "p.yaml")
    two = parse_plan(
        PLAN.replace(
            "  - {candidate: a, baseline: b}", "  - {candidate: a, baseline: c}\n  - {candidate: b, baseline: c}"
        ),
        "p.yaml",
    )
    single, both = expected_share(one, one.evals[0], "b"), expected_share(two, two.evals[0], "c")
    assert single is not None and both is not None
    assert single.identical < both.identical < 1.0  # c stops only when both of its pairs have stopped
