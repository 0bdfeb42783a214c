"""Waiting for a transient cause to clear: only the causes named are probed, until they clear or
the wait's limit has passed (a clock stands in for time)."""

from __future__ import annotations

from byog.analysis import energy
from byog.analysis.validity import CLIENT_SATURATED
from byog.bench.settle import wait_until_clear

SATURATED = f"{CLIENT_SATURATED}: it used 97% of a core (limit 90%)"


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_it_probes_the_named_cause_until_it_clears() -> None:
    clock, answers, asked = Clock(), iter([False, False, True]), []

    def client() -> bool:
        asked.append("client")
        clock.t += 1.0  # a probe takes about a second
        return next(answers)

    def gpu() -> bool:
        asked.append("gpu")
        return True

    settled = wait_until_clear(
        [SATURATED], None, probes={CLIENT_SATURATED: client, energy.THROTTLED: gpu}, max_s=30, clock=clock
    )
    assert settled.cleared and settled.waited_s == 3.0
    assert asked == ["client", "client", "client"]  # the GPU's clocks were not the cause


def test_a_cause_that_never_clears_gives_up_at_the_limit() -> None:
    clock = Clock()

    def busy() -> bool:
        clock.t += 1.0
        return False

    settled = wait_until_clear([SATURATED], None, probes={CLIENT_SATURATED: busy}, max_s=5, clock=clock)
    assert not settled.cleared and settled.waited_s == 5.0
