"""The Pareto frontier of tok/s per GPU against tok/s per user, and the per-session formulas."""

from __future__ import annotations

import pytest

from byog.analysis.frontier import (
    FrontierPoint,
    gpus_of,
    pareto_frontier,
    per_gpu,
)
from byog.analysis.sessions import (
    TurnFacts,
    counter_hit_rate,
    prefix_hit_rate,
    reusable_share,
    session_seconds,
    ttft_by_turn,
)


def P(label: str, x: float | None, y: float | None, valid: bool = True) -> FrontierPoint:
    return FrontierPoint(label, x, y, valid)


def test_frontier_keeps_only_undominated_valid_points_in_x_order() -> None:
    points = [
        P("c1", 100.0, 10.0),
        P("c2", 90.0, 18.0),
        P("c4", 70.0, 30.0),
        P("c8", 40.0, 45.0),
        P("dominated", 60.0, 25.0),  # c4 is faster for users and delivers more per GPU
        P("invalid", 200.0, 200.0, valid=False),  # would dominate everything; invalid points never count
        P("no-x", None, 50.0),
    ]
    assert [p.label for p in pareto_frontier(points)] == ["c8", "c4", "c2", "c1"]


def test_frontier_ties_and_equal_points() -> None:
    # same y, higher x dominates; two identical points both stay
    assert [p.label for p in pareto_frontier([P("a", 10, 5), P("b", 12, 5)])] == ["b"]
    assert [p.label for p in pareto_frontier([P("a", 10, 5), P("b", 10, 5)])] == ["a", "b"]
    assert pareto_frontier([]) == []


def test_per_gpu_and_gpus() -> None:
    assert gpus_of(8) == 8 and gpus_of(8, 2) == 16 and gpus_of(4, 1, 2) == 8
    assert per_gpu(1600.0, gpus_of(16)) == 100.0
    assert per_gpu(None, 8) is None
    with pytest.raises(ValueError):
        per_gpu(1.0, 0)


def T(
    session: int,
    turn: int,
    *,
    agent: int = 0,
    ok: bool = True,
    ttft: float | None = 0.1,
    n_in: int | None = 100,
    cached: int | None = None,
    reusable: int = 0,
    send: int = 0,
    last: int | None = 1,
) -> TurnFacts:
    return TurnFacts(session, agent, turn, ok, ttft, n_in, cached, reusable, send, last)


def test_ttft_by_turn_groups_main_agent_turns() -> None:
    turns = [
        T(0, 0, ttft=0.5),
        T(0, 1, ttft=0.2),
        T(1, 0, ttft=0.7),
        T(1, 1, ttft=0.1),
        T(1, 0, agent=1, ttft=0.05),
        T(2, 2, ttft=None),
    ]
    assert ttft_by_turn(turns) == {0: [0.5, 0.7], 1: [0.2, 0.1]}
    assert ttft_by_turn(turns, agent=None) == {0: [0.5, 0.7, 0.05], 1: [0.2, 0.1]}


def test_hit_rates_are_token_weighted() -> None:
    turns = [
        T(0, 0, n_in=100, cached=0, reusable=0),
        T(0, 1, n_in=300, cached=256, reusable=290),
        T(0, 2, n_in=100, cached=None, reusable=90),
        T(0, 3, ok=False, n_in=1000, cached=1000, reusable=1000),
    ]
    assert prefix_hit_rate(turns) == pytest.approx(256 / 400)  # the unreported and the failed turns left out
    assert reusable_share(turns) == pytest.approx((0 + 290 + 90) / 500)
    assert prefix_hit_rate([T(0, 0)]) is None
    assert (
        counter_hit_rate(30.0, 120.0) == 0.25
        and counter_hit_rate(None, 1.0) is None
        and counter_hit_rate(0.0, 0.0) is None
    )


def test_session_seconds_span_first_send_to_last_token_and_skip_broken_sessions() -> None:
    s = 1_000_000_000
    turns = [
        T(0, 0, send=0, last=2 * s),
        T(0, 1, send=3 * s, last=5 * s),
        T(0, 0, agent=1, send=2 * s, last=6 * s),
        T(1, 0, send=0, last=s),
        T(1, 1, ok=False, send=2 * s, last=None),
        T(2, 0, send=s, last=int(1.5 * s)),
    ]
    assert session_seconds(turns) == [6.0, 0.5]
