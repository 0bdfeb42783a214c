"""How the layers below the CLI say what they are doing, without printing anything themselves.

A pipeline step, the sweep or the eval runner takes a ``Reporter`` and calls it: a status line, a
table of plain strings, a live spinner line, progress bars. ``byog.cli`` passes one that renders
with rich on the terminal (``byog.cli.console_reporter``); library callers get ``NullReporter``
(silent); tests use ``tests.support.reporter.RecordingReporter`` (keeps what was said). Everything
handed over is plain text: no markup, so a cell or a server's error message shows exactly its characters.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Literal, Protocol

# Semantic styles; the renderer picks the look (the console: bold, dim, green, yellow, red).
Style = Literal["bold", "dim", "ok", "warn", "error"]


@dataclass(frozen=True)
class Table:
    """A table of plain strings (a cell shows exactly its text); ``notes`` are lines said after it."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]] = ()
    right: Collection[str] = frozenset()  # columns aligned right (numbers)
    show_header: bool = True
    notes: Sequence[str] = ()

    def with_row(self, *cells: str) -> Table:
        return replace(self, rows=(*self.rows, tuple(str(c) for c in cells)))


class Status(Protocol):
    """The live line of a step in progress."""

    def update(self, text: str, *, lead: str = "") -> None: ...


class ProgressTask(Protocol):
    """One bar: ``total`` None while the number of steps is not known yet."""

    def advance(self, n: int = 1) -> None: ...

    def update(
        self, *, description: str | None = None, total: int | None = None, style: Style | None = None
    ) -> None: ...


class ProgressBoard(Protocol):
    """Bars shown together (a server's sweep: one a point); each stays once finished."""

    def task(self, description: str, total: int | None = None) -> ProgressTask: ...


class Reporter(Protocol):
    """``lead`` is the name a line is about, said first and in bold; ``style`` marks the lead when
    there is one (the rest is plain detail), else the whole line."""

    @property
    def live(self) -> bool:
        """Whether status lines update in place (a terminal). Elsewhere they show nothing, and a
        caller that wants a long step's milestones in a log says them with ``line``."""
        ...

    def line(self, text: str, *, style: Style | None = None, lead: str = "") -> None: ...

    def table(self, table: Table) -> None: ...

    def status(self, text: str, *, lead: str = "") -> AbstractContextManager[Status]: ...

    def progress(self) -> AbstractContextManager[ProgressBoard]: ...


class NullStatus:
    def update(self, text: str, *, lead: str = "") -> None:
        pass


class _NullTask:
    def advance(self, n: int = 1) -> None:
        pass

    def update(self, *, description: str | None = None, total: int | None = None, style: Style | None = None) -> None:
        pass


class _NullBoard:
    def task(self, description: str, total: int | None = None) -> ProgressTask:  # noqa: ARG002 (ProgressBoard.task)
        return _NullTask()


class NullReporter:
    """Says nothing: the default for library callers and tests."""

    @property
    def live(self) -> bool:
        return False

    def line(self, text: str, *, style: Style | None = None, lead: str = "") -> None:
        pass

    def table(self, table: Table) -> None:
        pass

    @contextmanager
    def status(self, text: str, *, lead: str = "") -> Iterator[Status]:  # noqa: ARG002 (Reporter.status)
        yield NullStatus()

    @contextmanager
    def progress(self) -> Iterator[ProgressBoard]:
        yield _NullBoard()
