"""The CLI's reporter: what the layers below say, printed with rich as plain text (never markup)."""

from __future__ import annotations

import io

from rich.console import Console

from byog.cli.console_reporter import ConsoleReporter
from byog.core.reporter import Table

TABLE = Table("decode tok/s", ["pair", "ratio"], right={"ratio"}, notes=["a note [bold]after[/]"]).with_row(
    "cand vs base", "1.020"
)


def _reporter(terminal: bool) -> tuple[ConsoleReporter, io.StringIO]:
    out = io.StringIO()
    return ConsoleReporter(Console(file=out, force_terminal=terminal, width=120, color_system=None)), out


def test_off_a_terminal_a_table_is_markdown_with_its_title_and_rows() -> None:
    reporter, out = _reporter(terminal=False)
    reporter.table(TABLE)
    assert out.getvalue().splitlines() == [
        "decode tok/s",
        "",
        "| pair | ratio |",
        "|---|---:|",
        "| cand vs base | 1.020 |",
        "",
        "a note [bold]after[/]",
    ]


def test_on_a_terminal_a_table_is_a_rich_table_with_its_title_and_rows() -> None:
    reporter, out = _reporter(terminal=True)
    reporter.table(TABLE)
    text = out.getvalue()
    assert "decode tok/s" in text and "cand vs base" in text and "1.020" in text and "│" in text


def test_a_line_is_its_lead_then_its_text_never_read_as_markup() -> None:
    reporter, out = _reporter(terminal=False)
    reporter.line(": set 'key = PATH' under [signing]", lead="base", style="error")
    reporter.line("plain [red]text[/]")
    assert out.getvalue().splitlines() == ["base: set 'key = PATH' under [signing]", "plain [red]text[/]"]
    assert reporter.live is False


def test_status_and_progress_off_a_terminal_leave_only_the_finished_bars() -> None:
    reporter, out = _reporter(terminal=False)
    with reporter.status("starting", lead="base") as status:
        status.update(": still starting", lead="base")
    assert out.getvalue() == ""  # a spinner line is for a terminal only
    with reporter.progress() as board:
        task = board.task("base [point]", total=2)
        task.advance(2)
        task.update(description="base [point]: invalid", style="warn")
    assert "base [point]: invalid" in out.getvalue() and "2/2" in out.getvalue()
