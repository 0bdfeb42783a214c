"""A ``Reporter`` that keeps what was said, for tests that assert what a step told the user."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from byog.core.reporter import ProgressBoard, ProgressTask, Status, Style, Table


@dataclass
class RecordedTask:
    description: str
    total: int | None
    done: int = 0
    style: Style | None = None

    def advance(self, n: int = 1) -> None:
        self.done += n

    def update(self, *, description: str | None = None, total: int | None = None, style: Style | None = None) -> None:
        self.description = description if description is not None else self.description
        self.total = total if total is not None else self.total
        self.style = style if style is not None else self.style


@dataclass
class _RecordedBoard:
    tasks: list[RecordedTask]

    def task(self, description: str, total: int | None = None) -> ProgressTask:
        task = RecordedTask(description, total)
        self.tasks.append(task)
        return task


@dataclass
class _RecordedStatus:
    statuses: list[str]

    def update(self, text: str, *, lead: str = "") -> None:
        self.statuses.append(lead + text)


@dataclass
class RecordingReporter:
    """Keeps what was said, for tests: ``lines`` as their text (lead first), with their style in
    ``styled``; ``statuses`` every status text in order; ``tasks`` every progress bar."""

    lines: list[str] = field(default_factory=list)
    styled: list[tuple[str, Style | None]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    tasks: list[RecordedTask] = field(default_factory=list)
    is_live: bool = False

    @property
    def live(self) -> bool:
        return self.is_live

    def line(self, text: str, *, style: Style | None = None, lead: str = "") -> None:
        self.lines.append(lead + text)
        self.styled.append((lead + text, style))

    def table(self, table: Table) -> None:
        self.tables.append(table)

    @contextmanager
    def status(self, text: str, *, lead: str = "") -> Iterator[Status]:
        self.statuses.append(lead + text)
        yield _RecordedStatus(self.statuses)

    @contextmanager
    def progress(self) -> Iterator[ProgressBoard]:
        yield _RecordedBoard(self.tasks)
