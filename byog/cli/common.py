"""What every command shares: the consoles, the one place errors become a sentence, and the
options declared once (``Annotated`` aliases) so each means the same in every command.

A ``ByogError`` becomes one line on stderr and its exit code (0 ok, 1 check failed, 2 usage,
3 environment); Ctrl-C exits 130 saying finished results are kept. ``BYOG_DEBUG=1`` shows the
traceback instead.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from byog.cli.console_reporter import ConsoleReporter
from byog.core.errors import ByogError, PlanProblems
from byog.core.safe_text import terminal_text
from byog.core.settings import debug

# markup=False: no string byog prints (paths, plan names, error messages, bundle contents) is ever
# read as rich markup, so "[signing]" prints as written; styling is explicit (Text, style=).
console = Console(soft_wrap=True, markup=False)  # a long line is one line in a log or pipe, never re-wrapped at 80
err_console = Console(stderr=True, soft_wrap=True, markup=False)


class Group(TyperGroup):
    """Every byog group (``cls=`` of each ``typer.Typer``): its ``--help``, when absent, reads False, not None.

    typer coerces a parameter's value unless it already is a bool; coercing the group's absent ``--help``
    builds a pydantic adapter for it, and importing pydantic for that cost ~60 ms of every
    ``byog COMMAND --help`` (the command's own eager ``--help`` answers before its options are coerced).
    """

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            option.default = False
        return option


def reporter(to_stderr: bool = False) -> ConsoleReporter:
    """What a command hands the layers below to say what they do: stderr when stdout is the result (--json)."""
    return ConsoleReporter(err_console if to_stderr else console)


F = TypeVar("F", bound=Callable[..., Any])


def guarded(fn: F) -> F:
    """Run a command; map known failures to one sentence and an exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ByogError as err:
            if debug():
                raise
            # Plain text, one line each: an error may quote a bundle or file (markup, newlines, escapes).
            lines = err.lines() if isinstance(err, PlanProblems) else [str(err)]
            err_console.print(
                Text.assemble(("byog:", "bold red"), " ", terminal_text(lines[0])), highlight=False, soft_wrap=True
            )
            for line in lines[1:]:
                err_console.print("  " + terminal_text(line), highlight=False, soft_wrap=True)
            _print_resume(err)
            raise typer.Exit(err.exit_code) from None
        except KeyboardInterrupt as err:
            if debug():
                raise
            err_console.print(Text.assemble(("byog: ", "bold red"), "interrupted; finished results are kept."))
            _print_resume(err)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _print_resume(err: BaseException) -> None:
    """The command that resumes the stopped work, where the layer below named one."""
    resume = getattr(err, "resume", None)
    if resume:
        err_console.print(
            Text.assemble(("to resume: ", "bold"), terminal_text(resume)), highlight=False, soft_wrap=True
        )


def command(app: typer.Typer, name: str, **kwargs: Any) -> Callable[[F], F]:
    """Register ``fn`` as ``app``'s command ``name``, guarded."""

    def register(fn: F) -> F:
        app.command(name, **kwargs)(guarded(fn))
        return fn

    return register


def print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))


# --- options declared once ------------------------------------------------------------------

PlanArg = Annotated[str | None, typer.Argument(help="Plan file or built-in profile name (default: smoke).")]
TierOpt = Annotated[
    str, typer.Option("--tier", help="smoke | standard | full: cut a profile down (full = as written).")
]


def run_dir_option(
    help_text: str = "Run directory; an existing one resumes (default: a new one under BYOG_RUNS_DIR, else runs/).",
) -> Any:
    """``--run-dir``; a command whose run directory defaults elsewhere or must be shared says so in ``help_text``."""
    return typer.Option("--run-dir", help=help_text)


def server_option(help_text: str) -> Any:
    """``--server``: a server config of the plan by name (a ``list[str]`` parameter makes it repeatable)."""
    return typer.Option("--server", help=help_text)


RunDirOpt = Annotated[Path | None, run_dir_option()]
DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Offline datasets (default: BYOG_DATA_DIR, then the copy shipped inside byog)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
EndpointOpt = Annotated[
    str, typer.Option("--endpoint", help="Base URL of a running OpenAI-compatible server, e.g. http://127.0.0.1:8000.")
]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Served model name (default: the first of /v1/models).")]
TokenizerOpt = Annotated[
    str | None, typer.Option("--tokenizer", help="Tokenizer path or id (default: ask the server).")
]
AllowedSignersOpt = Annotated[
    Path | None,
    typer.Option("--allowed-signers", help="OpenSSH allowed_signers file (default: ~/.config/byog/allowed_signers)."),
]
OutOpt = Annotated[Path | None, typer.Option("-o", "--out", help="Where to write (default: beside the input).")]
ForOpt = Annotated[
    str | None,
    typer.Option("--for", help="OWNER/REPO#PR (or OWNER/REPO@COMMIT) the bundle is for, signed into its manifest."),
]
