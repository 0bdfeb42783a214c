"""The byog command line: parse, call one function, render. No logic lives here.

One module per command group (``run``, ``bench``, ``evals``, ``check``, ``bundles``, ``reproduce``, ``pr``, ``images``); options are
declared once in ``byog.cli.common``, and so is the mapping of errors to one sentence and an exit
code (0 ok, 1 check failed, 2 usage, 3 environment; ``BYOG_DEBUG=1`` shows the traceback).

A command imports only its own group: ``byog verify`` never loads the load generator, the
runtimes or lm-eval. ``GROUPS`` says which module registers which command; ``byog --help`` (no
command) loads every group to list them, and so does ``byog.cli.app`` (tests drive it).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

# command (first argument) -> the module of byog.cli that registers it; the order lists them in --help
GROUPS: dict[str, str] = {
    "version": "run",
    "run": "run",
    "serve": "run",
    "compare": "run",
    "plan": "run",
    "bench": "bench",
    "client-ceiling": "bench",
    "eval": "evals",
    "data": "evals",
    "check": "check",
    "verify": "bundles",
    "report": "bundles",
    "attach": "bundles",
    "bundle": "bundles",
    "keys": "bundles",
    "reproduce": "reproduce",
    "pr": "pr",
    "image": "images",
}


def _root() -> None:
    """Bring your own GPU: measure a vLLM change against stock vLLM and pack a signed bundle."""


def build_app(command: str | None = None) -> typer.Typer:
    """The typer app with the group of ``command`` registered (every group when it is unknown or None)."""
    app = typer.Typer(
        name="byog",
        help="Bring your own GPU: measure a vLLM change against stock vLLM and pack a signed bundle.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    # A callback keeps the app a group of commands: typer runs an app of one command as that
    # command, which would read `byog reproduce BUNDLE` as the bundle "reproduce" plus an extra one.
    app.callback()(_root)
    groups = [GROUPS[command]] if command in GROUPS else list(dict.fromkeys(GROUPS.values()))
    for group in groups:
        importlib.import_module(f"byog.cli.{group}").register(app)
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
