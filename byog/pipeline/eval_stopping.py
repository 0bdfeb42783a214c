"""``byog plan``'s expected eval items under a plan's group-sequential design (docs/statistics.md §1a).

An eval whose plan sets ``looks`` and a ``limit`` runs the later server of each pair in look-sized
chunks and stops where the paired gate stops (``byog.evals.runner.looks_for``); the earlier server
runs every item. Two servers whose evals run at once (``byog.pipeline.evals_at_once``), or in turns
on one GPU (an interleaved pair, ``byog.pipeline.eval_turns``), both run in the same looks and both
stop there (``byog.evals.lockstep``): each is charged the expected share.
The plan cannot know where the gate will stop, so it states the expected share of a stopping
server's items under two hypotheses, from the run's own boundaries (``group_sequential.stop_probabilities``):

- **identical servers** (true difference 0: the equivalence a contributor hopes for), the figure the
  expected wall time uses;
- **one margin apart** (the candidate one margin worse), shown beside it.

Both rest on the per-item differences d_i of the gate's variance model (``gate_power.difference_pmf``:
the task registry's prior, or the model fitted to ``--from-run``), whose discordance P(d_i != 0) the
assumptions line names. A server compared in several pairs stops when every pair has stopped (the
pairs taken as independent).
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from byog.analysis import group_sequential
from byog.analysis.eval_summary import margin_for, pairs_judged_by
from byog.analysis.gate_power import ItemModel, difference_pmf, pmf_moments, prior_model
from byog.pipeline.eval_power import model_from_run
from byog.pipeline.numerics import server_order
from byog.plans.tasks import TASKS, stops_early
from byog.schemas.plan import EvalSpec, Plan


@dataclass(frozen=True)
class ExpectedShare:
    """The share of a (server, eval)'s items expected to run: 1.0 where every item runs."""

    identical: float  # if the servers are identical (true difference 0)
    at_margin: float  # if the candidate is one margin worse
    discordance: float  # P(d_i != 0) for identical servers, under the model below
    model: str  # where the item model comes from: "prior" or "run <path>"
    design: str  # e.g. "3 looks, obf"


def _runs_after(plan: Plan, server: str, other: str) -> bool:
    """Whether ``server`` runs its evals after ``other`` (servers run in ``server_order``)."""
    order = server_order(plan)
    return order.index(server) > order.index(other)


def _model(task: str, from_run: Path | None, sampled: bool) -> ItemModel | None:
    return (model_from_run(from_run, task, sampled) if from_run else None) or prior_model(task)


def _stopped_by(
    n: int, design: group_sequential.SequentialDesign, margin: float, values: np.ndarray, probs: np.ndarray
) -> tuple[tuple[int, float], ...]:
    """(items, P(stopped at or before that look)) for one pair under the d_i pmf (values, probs)."""
    mean, sd = pmf_moments(values, probs)
    return _cumulative(n, design, margin, mean, sd)


@functools.lru_cache(maxsize=256)
def _cumulative(
    n: int, design: group_sequential.SequentialDesign, margin: float, mean: float, sd: float
) -> tuple[tuple[int, float], ...]:
    """Once per design and hypothesis: every server of a pair, and every tier, asks for the same."""
    cumulative, out = 0.0, []
    for size, p in group_sequential.stop_probabilities(n, design, margin, mean, sd):
        cumulative += p
        out.append((size, min(cumulative, 1.0)))
    return tuple(out)


def _share(stopped: tuple[tuple[int, float], ...], pairs: int, n: int) -> float:
    """E[items] / n for a server that stops when all ``pairs`` (independent, alike) have stopped."""
    before, expected = 0.0, 0.0
    for size, cdf in stopped:
        now = cdf**pairs
        expected += size * (now - before)
        before = now
    return expected / n


def expected_share(
    plan: Plan,
    spec: EvalSpec,
    server: str,
    from_run: Path | None = None,
    at_once: Collection[tuple[str, str]] = (),
) -> ExpectedShare | None:
    """The expected share of ``server``'s items of ``spec``; None where every item runs (no looks or no
    limit, a task byog's runner scores whole, or the earlier server of one of its pairs). ``at_once``:
    the pairs whose evals run at once; they and the plan's interleaved pairs run in the same looks."""
    task = TASKS.get(spec.task)
    if task is None or spec.limit is None or not stops_early(spec):
        return None
    pairs = pairs_judged_by(plan, spec, server)
    together = {frozenset(pair) for pair in (*at_once, *plan.interleaved_pairs)}  # in the same looks
    if not pairs or not all(
        frozenset((c, b)) in together or _runs_after(plan, server, b if c == server else c) for c, b in pairs
    ):
        return None
    sampled = task.sampled_with(spec.gen_kwargs)
    model = _model(spec.task, from_run, sampled)
    if model is None:
        return None
    assert spec.looks is not None  # stops_early
    design = group_sequential.SequentialDesign.of(spec)
    margin = margin_for(plan, spec.task)
    values, probs = difference_pmf(model, spec.passes, sampled)
    shifted_values, shifted_probs = difference_pmf(model, spec.passes, sampled, shift_points=-margin)
    return ExpectedShare(
        identical=_share(_stopped_by(spec.limit, design, margin, values, probs), len(pairs), spec.limit),
        at_margin=_share(
            _stopped_by(spec.limit, design, margin, shifted_values, shifted_probs), len(pairs), spec.limit
        ),
        discordance=1.0 - float(probs[values == 0.0].sum()),
        model=model.source,
        design=f"{len(spec.looks)} looks, {spec.spending}",
    )
