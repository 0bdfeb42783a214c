"""The byog command line: parse, call one function, render. No logic lives here.

Every command is wrapped by ``_guarded``: a ``ByogError`` becomes one sentence on stderr and its
exit code (0 ok, 1 check failed, 2 usage, 3 environment); ``BYOG_DEBUG=1`` shows the traceback.
Heavy dependencies are imported inside the commands so ``byog --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import typer
from rich.console import Console

from byog import __version__
from byog.errors import ByogError

app = typer.Typer(
    name="byog",
    help="Bring your own GPU: measure a vLLM change against stock vLLM and pack a signed bundle.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


def _guarded(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ByogError as err:
            if os.environ.get("BYOG_DEBUG"):
                raise
            err_console.print(f"[bold red]byog:[/] {err}", highlight=False, soft_wrap=True)
            raise typer.Exit(err.exit_code) from None
        except KeyboardInterrupt:
            if os.environ.get("BYOG_DEBUG"):
                raise
            err_console.print("[bold red]byog:[/] interrupted; finished results are kept and a rerun resumes.")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def command(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    def register(fn: F) -> F:
        app.command(*args, **kwargs)(_guarded(fn))
        return fn

    return register


def print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))


# --- the spine ------------------------------------------------------------------------------

@command("version")
def version_cmd() -> None:
    """Print byog's version."""
    typer.echo(__version__)


@command("run")
def run_cmd(
    plan: Optional[str] = typer.Argument(None, help="Plan file or built-in profile name (default: smoke)."),
    plan_opt: Optional[str] = typer.Option(None, "--plan", help="Same as the PLAN argument."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Run directory; an existing one resumes (default: runs/<new id>)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Launch every server of the plan, run its sweeps and evals, derive the verdict, write the run directory."""
    from byog.pipeline import run_plan

    result = run_plan(plan_opt or plan, run_dir=run_dir, console=err_console if as_json else console)
    if as_json:
        print_json(result)


@command("serve")
def serve_cmd(
    plan: Optional[str] = typer.Argument(None, help="Plan file or built-in profile name (default: smoke)."),
    server: Optional[str] = typer.Option(None, "--server", help="Which server config to start (default: the baseline)."),
    run_dir: Path = typer.Option(Path("runs/serve"), "--run-dir", help="Where server.json and the log go."),
) -> None:
    """Start one server config of a plan and keep it up until Ctrl-C (for byog bench/eval --endpoint)."""
    from byog.pipeline import serve_until_interrupted

    serve_until_interrupted(plan, server, run_dir, console)


@command("compare")
def compare_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Re-derive summary.json and report.md from a run directory's raw records."""
    from byog.pipeline import derive_and_write

    summary = derive_and_write(run_dir, console=err_console if as_json else console)
    if as_json:
        print_json(summary)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
