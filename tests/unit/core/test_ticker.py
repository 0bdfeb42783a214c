"""``ticking`` calls its function while the block runs and never after it."""

from __future__ import annotations

import threading

from byog.core.ticker import ticking


def test_ticks_while_the_block_runs_and_stops_with_it() -> None:
    calls: list[int] = []
    three = threading.Event()

    def tick() -> None:
        calls.append(1)
        if len(calls) >= 3:
            three.set()

    with ticking(tick, 0.01, name="test-ticker", join_s=2):
        assert three.wait(5)  # the block waits for the ticks, not a fixed time
    after = len(calls)
    assert not any(t.name == "test-ticker" for t in threading.enumerate())
    assert len(calls) == after
