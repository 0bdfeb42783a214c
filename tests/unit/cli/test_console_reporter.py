"""The CLI's reporter: what the layers below say, printed with rich as plain text (never markup)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from byog.cli.console_reporter import ConsoleReporter, say
from byog.core.reporter import Table
from tests.support.cmark import render_gfm
from tests.support.hostile_47 import CLEAR, CSI_C1, FORGED, OSC8, RLO

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
        "a note \\[bold\\]after\\[/\\]",  # markdown text: GitHub shows the brackets
        "",
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


@pytest.mark.parametrize("hostile", [OSC8, CLEAR, RLO, FORGED, CSI_C1])
@pytest.mark.parametrize("terminal", [True, False])
def test_hostile_text_reaches_the_console_as_visible_escapes(hostile: str, terminal: bool) -> None:
    reporter, out = _reporter(terminal=terminal)
    say(reporter.console, "label ", hostile)
    reporter.line(hostile, lead="lead ")
    reporter.table(Table(hostile, ["field", "value"]).with_row(hostile, hostile))
    printed = out.getvalue()
    for raw in ("\x1b", "\x9b", "\u202e"):
        assert raw not in printed
    assert not any(line.startswith("ok   signature") for line in printed.splitlines())
    assert "\\x1b" in printed or "\\u202e" in printed or "\\n" in printed or "\\x9b" in printed


def test_a_piped_table_is_inert_markdown_as_github_renders_it() -> None:
    reporter, out = _reporter(terminal=False)
    hostile = "[link](https://evil.example) ![img](https://evil.example/i.png) @octocat </details> <b>x</b> #12 | y"
    reporter.table(Table("items", ["answer"]).with_row(hostile))
    html = render_gfm(out.getvalue())
    for live in ("<a ", "<img", "</details>", "<b>"):
        assert live not in html
    assert "@\u2060octocat" in html and html.count("<td>") == 1  # nobody pinged; the "|" stayed in its cell
