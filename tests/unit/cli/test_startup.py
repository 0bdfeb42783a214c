"""`byog verify` loads only the bundles command group (start-up time), and the map from command to
group that makes that possible names every command each group registers."""

from __future__ import annotations

import subprocess
import sys

import typer

from byog.cli import GROUPS, build_app


def test_every_command_maps_to_the_group_that_registers_it() -> None:
    for command, group in GROUPS.items():
        app = build_app(command)
        names = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
        assert command in names and all(GROUPS.get(name) == group for name in names), (command, group, names)


def test_verify_does_not_import_the_other_groups() -> None:
    probe = (
        "import sys\n"
        "sys.argv = ['byog', 'verify', '--help']\n"
        "from byog.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in ('byog.cli.bench', 'byog.cli.evals', 'byog.cli.run', 'byog.cli.images', 'byog.pipeline.run',"
        " 'httpx', 'scipy.stats', 'pandas', 'pyarrow.dataset', 'matplotlib') if m in sys.modules]\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in out, out
    assert "--allowed-signers" in out


def test_the_full_app_still_has_every_command() -> None:
    from byog.cli import app

    assert isinstance(app, typer.Typer)
    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert names == set(GROUPS)


def test_every_command_runs_by_its_name_from_the_app_main_builds() -> None:
    """main() builds an app holding only the command's own group; a group of one command must still
    take the command's name (typer would otherwise run it as the app itself)."""
    from typer.testing import CliRunner

    from byog.cli import GROUPS, build_app

    for command in GROUPS:
        result = CliRunner().invoke(build_app(command), [command, "--help"])
        usage = next((line for line in result.output.splitlines() if "Usage:" in line), "")
        assert result.exit_code == 0 and f" {command} " in usage, (command, result.output[:300])
