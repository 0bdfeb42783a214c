"""The byog command line: parse, call one function, render. No logic lives here.

One module per command group (``init``, ``run``, ``bench``, ``evals``, ``check``, ``bundles``, ``items``, ``export``,
``reproduce``, ``pr``, ``images``, ``slurm``); options are declared once in ``byog.cli.common``, and so is the
mapping of errors to one sentence and an exit code (0 ok, 1 check failed, 2 usage, 3 environment; ``BYOG_DEBUG=1``
shows the traceback).

A command imports only its own module, and a cli module imports only typer, rich and byog.core at
its top: what a command runs (pipeline, bundles, runtimes, analysis) is imported inside the command
when it runs, so ``byog --help`` and ``byog verify --help`` load no pipeline, numpy or pandas
(tests/unit/cli/test_startup.py holds the import graph; benchmarks/cli_startup.py times it).
``COMMANDS`` is the one list of commands: each name and the attribute of the module that implements
it (a function is a command, a ``typer.Typer`` a group of them); ``byog --help`` (no command) loads
every cli module to list them, and so does ``byog.cli.app`` (tests drive it).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

from byog.cli.common import Group
from byog.cli.common import command as guarded_command

# command (first argument) -> "module:attribute" of byog.cli; the order lists them in --help
COMMANDS: dict[str, str] = {
    "version": "run:version_cmd",
    "run": "run:run_cmd",
    "calibrate": "run:calibrate_cmd",
    "serve": "run:serve_cmd",
    "derive": "run:derive_cmd",
    "plan": "run:plan_cmd",
    "init": "init:init_cmd",
    "bench": "bench:bench_cmd",
    "client-ceiling": "bench:client_ceiling_cmd",
    "eval": "evals:eval_cmd",
    "data": "evals:data_app",
    "check": "check:check_app",
    "verify": "bundles:verify_cmd",
    "report": "bundles:report_cmd",
    "items": "items:items_cmd",
    "export": "export:export_cmd",
    "attach": "bundles:attach_cmd",
    "bundle": "bundles:bundle_app",
    "keys": "bundles:keys_app",
    "reproduce": "reproduce:reproduce_cmd",
    "pr": "pr:pr_app",
    "image": "images:image_app",
    "slurm": "slurm:slurm_app",
}
# other names a command answers to, left out of --help: alias -> command
ALIASES: dict[str, str] = {"compare": "derive"}


def _root() -> None:
    """Bring your own GPU: measure a vLLM change against stock vLLM and pack a signed bundle."""


def _add(app: typer.Typer, name: str, *, hidden: bool = False) -> None:
    module, attribute = COMMANDS[ALIASES.get(name, name)].split(":")
    target = getattr(importlib.import_module(f"byog.cli.{module}"), attribute)
    if isinstance(target, typer.Typer):
        app.add_typer(target, name=name, hidden=hidden, cls=Group)
    else:
        guarded_command(app, name, hidden=hidden)(target)


def build_app(command: str | None = None) -> typer.Typer:
    """The typer app with ``command`` registered (every command when it is unknown or None)."""
    app = typer.Typer(
        name="byog",
        cls=Group,
        help="Bring your own GPU: measure a vLLM change against stock vLLM and pack a signed bundle.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    # A callback keeps the app a group of commands: typer runs an app of one command as that
    # command, which would read `byog reproduce BUNDLE` as the bundle "reproduce" plus an extra one.
    app.callback()(_root)
    if command in COMMANDS or command in ALIASES:
        _add(app, command, hidden=command in ALIASES)
    else:
        for name in COMMANDS:
            _add(app, name)
        for alias in ALIASES:
            _add(app, alias, hidden=True)
    return app


def __getattr__(name: str) -> Any:
    """``byog.cli.app``: the whole app, built on first use (for typer's CliRunner in tests)."""
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module 'byog.cli' has no attribute {name!r}")


def main() -> None:
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    build_app(command)()


if __name__ == "__main__":
    main()
