"""A function called every ``period_s`` on a daemon thread while a block runs (live status lines)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def ticking(tick: Callable[[], None], period_s: float, *, name: str, join_s: float) -> Iterator[None]:
    """Call ``tick`` every ``period_s`` until the block ends; then wait at most ``join_s`` for the thread."""
    done = threading.Event()

    def loop() -> None:
        while not done.wait(period_s):
            tick()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=join_s)
