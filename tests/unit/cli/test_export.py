"""`byog export` on a run directory: one file per table, a line per file; a bad format is one sentence
and exit 2 with nothing written. (Bundles, hostile ones included: tests/unit/bundles/test_results.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.analysis.frame_columns import TABLES
from byog.cli import app
from tests.support.bundles_kit import TINY
from tests.support.synthetic import make_run_dir


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run_dir(tmp_path_factory.mktemp("export") / "run", TINY).root


def test_export_writes_a_file_per_table(run_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export", str(run_dir), "--to", str(tmp_path / "out"), "--format", "parquet"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(f"{t}.parquet" for t in TABLES)
    assert result.output.splitlines()[0] == f"wrote {tmp_path / 'out' / 'requests.parquet'} (4 rows)"


def test_an_unknown_format_is_one_sentence_and_writes_nothing(run_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export", str(run_dir), "--to", str(tmp_path / "out"), "--format", "xlsx"])
    assert result.exit_code == 2
    assert "unknown format 'xlsx'" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
