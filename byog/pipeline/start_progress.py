"""What a starting server is doing, while it starts: its phase, read from its log as it grows.

A CPU server compiles for minutes and a large model loads for tens of them; ``watch_start`` follows
``server.log`` from where it ended when the start began, names the phase the newest line began
(``byog.analysis.server_log.start_phase``) and hands a ``StartProgress`` to ``report`` once a second,
from a daemon thread; the caller renders it (a live line on a terminal, plain lines in a log).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from byog.analysis.server_log import start_phase
from byog.core.ticker import ticking

POLL_S = 1.0
FIRST_PHASE = "starting the process"  # before vLLM logs the first line of a phase


@dataclass(frozen=True)
class StartProgress:
    phase: str
    elapsed_s: float  # since the start began
    phase_s: float  # since this phase began
    changed: bool  # the phase began since the last report
    new_minute: bool  # another whole minute of this phase passed since the last report


class LogPhases:
    """The phase of a server.log's new lines (those written after ``offset``)."""

    def __init__(self, path: Path, offset: int | None = None) -> None:
        self.path = path
        self.offset = offset if offset is not None else (path.stat().st_size if path.is_file() else 0)
        self.phase = FIRST_PHASE
        self._partial = b""

    def read(self) -> bool:
        """Read what was written since the last call; True when the phase changed."""
        if not self.path.is_file():
            return False
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        before = self.phase
        for line in lines:
            self.phase = start_phase(line.decode("utf-8", "replace")) or self.phase
        return self.phase != before


@contextmanager
def watch_start(path: Path, report: Callable[[StartProgress], None]) -> Iterator[None]:
    """Report the phase of the server whose log is ``path`` once a second, until the block ends."""
    phases = LogPhases(path)
    began = time.monotonic()
    phase_began, minutes = began, 0

    def follow() -> None:
        nonlocal phase_began, minutes
        changed = phases.read()
        now = time.monotonic()
        if changed:
            phase_began, minutes = now, 0
        passed = int((now - phase_began) // 60)
        report(StartProgress(phases.phase, now - began, now - phase_began, changed, passed > minutes))
        minutes = passed

    with ticking(follow, POLL_S, name="byog-start-progress", join_s=5):
        yield


def elapsed(seconds: float) -> str:
    """45 s, 3 min 05 s, 1 h 02 min."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
