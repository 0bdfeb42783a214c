"""Ctrl-C and SIGTERM as one interrupt, noted when it lands, so every `finally` that stops a server runs.

The first signal raises ``KeyboardInterrupt`` and notes the moment (``stopping_for``): what is on
the screen then says "stopping: waiting for vLLM to exit (N s)" instead of the phase of a start
that is being torn down. A second signal while servers stop is not raised again: raising it
would abandon the stop half way and leave vLLM's engine processes behind (a third one does, for
a stop that hangs: then the kernel's parent-death signal is all that reaches vLLM). The stop itself is
bounded (``byog.runtimes.local.kill_process_group``: the leader's grace, then the group's SIGTERM,
then SIGKILL), so byog exits within that bound after the first Ctrl-C.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator

from byog.core.reporter import Reporter
from byog.core.ticker import ticking

_interrupted_at: float | None = None
_signals = 0
ABANDON_AFTER = 3  # the signal that raises even while servers stop


def stopping_for() -> float | None:
    """Seconds since the interrupt that is stopping this run, or None while it runs on."""
    return None if _interrupted_at is None else time.monotonic() - _interrupted_at


def stopping_line(seconds: float) -> str:
    return f"stopping: waiting for vLLM to exit ({int(seconds)} s)"


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM and SIGINT into one KeyboardInterrupt for the duration of the block."""
    global _interrupted_at, _signals

    def handler(_signum: int, _frame: object) -> None:
        global _interrupted_at, _signals
        _signals += 1
        if _interrupted_at is not None and _signals < ABANDON_AFTER:
            return  # already stopping: let the stop finish
        _interrupted_at = _interrupted_at or time.monotonic()
        raise KeyboardInterrupt

    _interrupted_at, _signals = None, 0
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
        _interrupted_at, _signals = None, 0


@contextlib.contextmanager
def stop_shown(reporter: Reporter, label: str) -> Iterator[None]:
    """A server stopping: after an interrupt, "stopping: waiting for vLLM to exit (N s)", counted live."""
    if stopping_for() is None:
        with reporter.status(": stopping", lead=label):
            yield
        return
    with reporter.status(f": {stopping_line(stopping_for() or 0)}", lead=label) as status:
        if not reporter.live:
            reporter.line(f": {stopping_line(stopping_for() or 0)}", lead=label)

        def tick() -> None:
            status.update(f": {stopping_line(stopping_for() or 0)}", lead=label)

        with ticking(tick, 1.0, name="byog-stopping", join_s=2):
            yield
