"""The one ``Reporter`` that prints: rich, on the console a command picked (stdout, or stderr under --json).

Everything the CLI prints that can hold text it did not write (a bundle's, an image's labels, a
server's log) goes through this module: ``say`` (a line), ``print_table`` and ``ConsoleReporter``.
On a terminal each string is escaped by ``safe_text.terminal_text`` (no escape sequence, control or
bidi character acts on the terminal) and printed as ``rich.text.Text`` (never markup); a table
printed into a pipe is markdown, each cell through ``safe_text.md_cell`` (no live link, image,
@mention or HTML).

Tables stay readable wherever they are printed. On a terminal a table is a rich table fitted to the
window. Anywhere else (a pipe, a CI log, a file) rich would squeeze it into 80 columns and print "…"
for every cell, so it is printed as a markdown table instead: nothing truncated, no width limit,
greppable, and pasteable into a PR.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.status import Status as RichStatus
from rich.table import Table as RichTable
from rich.text import Text

from byog.core.reporter import ProgressBoard, ProgressTask, Status, Style, Table
from byog.core.safe_text import md_cell, terminal_text

COLOURS: dict[Style, str] = {"bold": "bold", "dim": "dim", "ok": "green", "warn": "yellow", "error": "red"}


Part = str | tuple[str, str]  # text, or (text, rich style)


def line_text(*parts: Part, style: str = "") -> Text:
    """One terminal line of ``parts``, each escaped by ``terminal_text``; a part may carry a style."""
    pieces = [(terminal_text(p), "") if isinstance(p, str) else (terminal_text(p[0]), p[1]) for p in parts]
    return Text.assemble(*pieces, style=style)


def say(console: Console, *parts: Part, style: str = "", fit: bool = False, indent: int = 0) -> None:
    """Print one line (``line_text``) after ``indent`` spaces; ``fit``: on a terminal, cut to its
    width instead of wrapping."""
    cut: dict[str, Any] = (
        {"no_wrap": True, "overflow": "ellipsis"} if fit and console.is_terminal else {"soft_wrap": True}
    )
    console.print(Text(" " * indent) + line_text(*parts, style=style), highlight=False, **cut)


def styled_line(text: str, *, style: Style | None = None, lead: str = "") -> Text:
    """A reporter's line: each of its lines escaped (a log tail keeps its line breaks, nothing else)."""
    colour = COLOURS[style] if style else ""
    body = "\n".join(terminal_text(line) for line in text.split("\n"))
    if not lead:
        return Text(body, style=colour)
    return Text.assemble((terminal_text(lead), f"bold {colour}".strip()), body)


def _cell(text: str) -> str:
    """A cell as inert markdown; byog's strike-through of an invalid number (``struck``) stays markup."""
    from byog.report.format import unstruck  # loads the record schemas (pyarrow): only a piped table needs it

    parts = unstruck(text)
    return f"~~{md_cell(parts[0])}~~ {md_cell(parts[1])}" if parts else md_cell(text)


def _markdown(table: Table) -> str:
    lines = [md_cell(table.title), ""] if table.title else []
    if table.show_header:
        lines.append("| " + " | ".join(md_cell(c) for c in table.columns) + " |")
        lines.append("|" + "|".join("---:" if c in table.right else "---" for c in table.columns) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    lines += ["", *(md_cell(note) for note in table.notes)] if table.notes else []
    return "\n".join(lines)


def print_table(console: Console, table: Table) -> None:
    """A rich table on a terminal; elsewhere (a pipe, a log) an inert markdown table (``_markdown``)."""
    if not console.is_terminal:
        console.print(_markdown(table), markup=False, highlight=False, soft_wrap=True)
        console.print()
        return
    rich_table = RichTable(title=Text(terminal_text(table.title)), show_header=table.show_header)
    for column in table.columns:
        rich_table.add_column(Text(terminal_text(column)), justify="right" if column in table.right else "left")
    for row in table.rows:
        rich_table.add_row(*(Text(terminal_text(c)) for c in row))
    console.print(rich_table)
    for note in table.notes:
        say(console, note)


class _ConsoleStatus:
    def __init__(self, status: RichStatus) -> None:
        self._status = status

    def update(self, text: str, *, lead: str = "") -> None:
        self._status.update(styled_line(text, lead=lead))


class _ConsoleTask:
    def __init__(self, progress: Progress, task: TaskID, description: str) -> None:
        self._progress, self._task, self._description = progress, task, description
        self._style: Style | None = None

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)

    def update(self, *, description: str | None = None, total: int | None = None, style: Style | None = None) -> None:
        self._description = description if description is not None else self._description
        self._style = style if style is not None else self._style
        # the column adds its own markup around the description: the text itself is escaped
        text = escape(terminal_text(self._description))
        marked = f"[{COLOURS[self._style]}]{text}" if self._style else text
        self._progress.update(self._task, description=marked, total=total)


class _ConsoleBoard:
    def __init__(self, progress: Progress) -> None:
        self._progress = progress

    def task(self, description: str, total: int | None = None) -> ProgressTask:
        return _ConsoleTask(
            self._progress, self._progress.add_task(escape(terminal_text(description)), total=total), description
        )


class ConsoleReporter:
    """Lines are plain text (never parsed as markup), one line each in a log or pipe."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @property
    def live(self) -> bool:
        return self.console.is_terminal

    def line(self, text: str, *, style: Style | None = None, lead: str = "") -> None:
        self.console.print(styled_line(text, style=style, lead=lead), highlight=False, soft_wrap=True)

    def table(self, table: Table) -> None:
        print_table(self.console, table)

    @contextmanager
    def status(self, text: str, *, lead: str = "") -> Iterator[Status]:
        with self.console.status(styled_line(text, lead=lead)) as status:
            yield _ConsoleStatus(status)

    @contextmanager
    def progress(self) -> Iterator[ProgressBoard]:
        columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=self.console, transient=False) as progress:
            yield _ConsoleBoard(progress)
