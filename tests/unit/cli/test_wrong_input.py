"""Errors that point the right way: each names what it got and the command that takes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.cli import app

runner = CliRunner()


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "plan.yaml").write_text("name: x\n")
    return run


def test_verify_given_a_run_directory_says_to_pack_it(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    result = runner.invoke(app, ["verify", str(run)])
    assert result.exit_code == 2
    assert (
        f"{run} is a run directory, not a bundle: `byog bundle pack {run}`, then `byog verify {run}/bundle.tar.gz`"
        in (" ".join(result.output.split()))
    )


@pytest.mark.parametrize("command", [["bundle", "pack"], ["derive"]])
def test_a_missing_run_directory_is_named_as_missing(tmp_path: Path, command: list[str]) -> None:
    result = runner.invoke(app, [*command, str(tmp_path / "runs" / "2026-nope")])
    assert result.exit_code == 2
    assert "run directory" in result.output and "does not exist" in result.output
    assert "summary.json" not in result.output


def test_derive_given_a_bundle_says_verify_takes_it(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(b"\x1f\x8b")
    result = runner.invoke(app, ["derive", str(bundle)])
    assert result.exit_code == 2
    assert "is a bundle, not a run directory: `byog verify" in " ".join(result.output.split())


@pytest.mark.parametrize(("value", "on"), [("0", False), ("false", False), ("", False), ("1", True), ("yes", True)])
def test_byog_debug_is_on_only_for_a_true_value(monkeypatch: pytest.MonkeyPatch, value: str, on: bool) -> None:
    from byog.core.settings import debug

    monkeypatch.setenv("BYOG_DEBUG", value)
    assert debug() is on
