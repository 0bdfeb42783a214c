"""Tables that stay readable wherever they are printed.

On a terminal a table is a rich table fitted to the window. Anywhere else (a pipe, a CI log, a
file) rich would squeeze it into 80 columns and print "…" for every cell, so it is printed as a
markdown table instead: nothing truncated, no width limit, greppable, and pasteable into a PR.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table
from rich.text import Text


@dataclass
class TextTable:
    """A table of plain strings (no markup: a cell shows exactly its text)."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    right: set[str] = field(default_factory=set)  # columns aligned right (numbers)
    show_header: bool = True

    def add_row(self, *cells: str) -> None:
        self.rows.append([str(c) for c in cells])


def _markdown(table: TextTable) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [f"{table.title}", ""] if table.title else []
    if table.show_header:
        lines.append("| " + " | ".join(cell(c) for c in table.columns) + " |")
        lines.append("|" + "|".join("---:" if c in table.right else "---" for c in table.columns) + "|")
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def print_table(console: Console, table: TextTable) -> None:
    if not console.is_terminal:
        console.print(_markdown(table), markup=False, highlight=False, soft_wrap=True)
        console.print()
        return
    rich_table = Table(title=Text(table.title), show_header=table.show_header)
    for column in table.columns:
        rich_table.add_column(Text(column), justify="right" if column in table.right else "left")
    for row in table.rows:
        rich_table.add_row(*(Text(c) for c in row))
    console.print(rich_table)
