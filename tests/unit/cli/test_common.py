"""No string byog prints is read as rich markup: error messages, paths and bundle contents print as written."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from byog.cli.common import command
from byog.core.errors import UsageError


def test_an_error_message_with_brackets_prints_verbatim() -> None:
    app = typer.Typer()

    @command(app, "boom")
    def boom() -> None:
        raise UsageError("put 'key = PATH' under [signing] in [bold]~/.config/byog/config[/bold]")

    @command(app, "other")
    def other() -> None:  # a second command, so typer keeps the command name
        pass

    result = CliRunner().invoke(app, ["boom"])
    assert result.exit_code == 2
    assert "byog: put 'key = PATH' under [signing] in [bold]~/.config/byog/config[/bold]" in result.output
