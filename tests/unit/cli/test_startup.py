"""`byog verify` loads only its own module (start-up time), and ``COMMANDS``, the one list that
makes that possible, names every command the cli modules define."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import typer

import byog.cli
from byog.cli import ALIASES, COMMANDS, build_app


def _names(app: typer.Typer) -> list[str | None]:
    return [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]


def test_the_app_main_builds_for_a_command_holds_that_command_only() -> None:
    for command in [*COMMANDS, *ALIASES]:
        assert _names(build_app(command)) == [command], command


def test_every_command_a_cli_module_defines_is_listed() -> None:
    """A ``*_cmd`` function or a ``typer.Typer`` group in a cli module that ``COMMANDS`` does not name
    would never run: a command added in one place only fails here."""
    listed = set(COMMANDS.values())
    defined = set()
    for info in pkgutil.iter_modules(byog.cli.__path__):
        if info.name == "common":
            continue
        module = importlib.import_module(f"byog.cli.{info.name}")
        groups = {name: value for name, value in vars(module).items() if isinstance(value, typer.Typer)}
        in_a_group = {c.callback.__wrapped__ for group in groups.values() for c in group.registered_commands}
        defined |= {f"{info.name}:{name}" for name in groups}
        defined |= {
            f"{info.name}:{name}"
            for name, value in vars(module).items()
            if name.endswith("_cmd")
            and getattr(value, "__module__", None) == module.__name__
            and value not in in_a_group
        }
    assert defined == listed
    assert all(target in COMMANDS for target in ALIASES.values())


def test_compare_is_a_hidden_name_of_derive() -> None:
    from typer.testing import CliRunner

    from byog.cli import app

    hidden = {c.name: c.hidden for c in app.registered_commands}
    assert hidden["derive"] is False and hidden["compare"] is True
    listed = [
        line.split()[1] for line in CliRunner().invoke(app, ["--help"]).output.splitlines() if line.startswith("│ ")
    ]
    assert "derive" in listed and "compare" not in listed
    callbacks = {c.name: c.callback.__wrapped__ for c in app.registered_commands}
    assert callbacks["compare"] is callbacks["derive"]
    assert "Usage: byog compare" in CliRunner().invoke(app, ["compare", "--help"]).output


def test_verify_does_not_import_the_other_groups() -> None:
    probe = (
        "import sys\n"
        "sys.argv = ['byog', 'verify', '--help']\n"
        "from byog.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in ('byog.cli.bench', 'byog.cli.evals', 'byog.cli.run', 'byog.cli.images', "
        "'byog.pipeline.run',"
        " 'httpx', 'scipy.stats', 'pandas', 'pyarrow.dataset', 'matplotlib') if m in sys.modules]\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in out, out
    assert "--allowed-signers" in out


def test_the_full_app_still_has_every_command() -> None:
    from byog.cli import app

    assert isinstance(app, typer.Typer)
    assert set(_names(app)) == set(COMMANDS) | set(ALIASES)


def test_every_command_runs_by_its_name_from_the_app_main_builds() -> None:
    """main() builds an app holding only the command's own group; a group of one command must still
    take the command's name (typer would otherwise run it as the app itself)."""
    from typer.testing import CliRunner

    for command in [*COMMANDS, *ALIASES]:
        result = CliRunner().invoke(build_app(command), [command, "--help"])
        usage = next((line for line in result.output.splitlines() if "Usage:" in line), "")
        assert result.exit_code == 0 and f" {command} " in usage, (command, result.output[:300])


BELOW_CLI = (
    "byog.pipeline",
    "byog.bundles",
    "byog.runtimes",
    "byog.bench",
    "byog.report",
    "byog.schemas",
    "byog.plans",
)
# pydantic: typer builds a pydantic adapter for each parameter it coerces; a command's --help coerces none
HEAVY = ("pandas", "pyarrow", "matplotlib", "scipy", "vllm", "numpy", "httpx", "lm_eval", "docker", "pydantic")


def _loaded_after(argv: list[str]) -> list[str]:
    """The heavy packages and byog layers below the CLI left in sys.modules after ``byog ARGV`` (a fresh process)."""
    probe = (
        "import sys\n"
        f"sys.argv = ['byog', *{argv!r}]\n"
        "from byog.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"below = {BELOW_CLI!r}\n"
        f"print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m.startswith(below)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.startswith("LOADED")]


def test_help_lists_every_command_without_loading_what_they_run() -> None:
    """`byog --help` imports every cli module to list its commands; each imports what it runs only when it runs."""
    assert _loaded_after(["--help"]) == ["LOADED []"]


def test_a_commands_help_loads_nothing_it_runs() -> None:
    for command in (
        ["verify", "--help"],
        ["reproduce", "--help"],
        ["run", "--help"],
        ["bench", "--help"],
        ["init", "--help"],
        ["keys", "add", "--help"],  # a command of a group of commands: two groups' --help options
    ):
        assert _loaded_after(command) == ["LOADED []"], command
