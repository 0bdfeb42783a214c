"""``byog export``'s files: every table written, and read back equal in every format; a CSV cell that
a spreadsheet would run as a formula is quoted, and read back as it was."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from byog.analysis.frame_columns import TABLES
from byog.analysis.frames import RunTables, frame
from byog.bundles.export import FORMATS, read_table, table_bytes, write_tables
from byog.bundles.results import Results, open_results
from byog.core.errors import UsageError
from byog.core.paths import RunDir
from tests.support.flipped import HOSTILE_ANSWER, arithmetic_rows, write_task
from tests.support.report_runs import SPEC, derive
from tests.support.synthetic import make_run_dir


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    run_dir = make_run_dir(tmp_path_factory.mktemp("export") / "run", SPEC)
    rows = arithmetic_rows(10)
    write_task(run_dir, "candidate", "arithmetic_generated", rows, set(range(6)), answer_of=lambda i: "=1+1")
    write_task(run_dir, "baseline", "arithmetic_generated", rows, set(range(2, 8)), answer_of=lambda i: HOSTILE_ANSWER)
    derive(run_dir)
    return open_results(run_dir.root)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_table_is_written_and_reads_back_equal(results: Results, fmt: str, tmp_path: Path) -> None:
    written = write_tables(results, tmp_path / "out", fmt)  # type: ignore[arg-type]
    assert [p.name for p in written] == [f"{name}.{fmt}" for name in TABLES]
    for path in written:
        original = results.table(path.stem)
        assert len(original) > 0, path.stem
        pd.testing.assert_frame_equal(read_table(path), original, check_exact=True)


def test_a_formula_cell_is_quoted_in_csv_and_read_back_as_it_was(results: Results, tmp_path: Path) -> None:
    items = results.items
    assert "=1+1" in set(items.candidate_answers.dropna())
    text = table_bytes("items", items, "csv").decode()
    assert ",'=1+1," in text and ",=1+1," not in text
    path = tmp_path / "items.csv"
    path.write_text(text)
    pd.testing.assert_frame_equal(read_table(path), items, check_exact=True)


def test_a_cell_with_a_lone_surrogate_is_written_as_valid_utf8(tmp_path: Path) -> None:
    servers = frame("servers", [{"source": "run", "server": "a", "argv": "vllm serve \udce9"}])
    assert servers.argv[0] == "vllm serve \\udce9"
    assert "vllm serve \\udce9" in table_bytes("servers", servers, "csv").decode("utf-8")
    assert json.loads(table_bytes("servers", servers, "json"))[0]["argv"] == "vllm serve \\udce9"
    assert pd.read_parquet(io.BytesIO(table_bytes("servers", servers, "parquet"))).argv[0] == "vllm serve \\udce9"


def test_an_unknown_format_or_table_file_is_bad_input(results: Results, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown format 'xlsx'"):
        write_tables(results, tmp_path / "out", "xlsx")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()
    with pytest.raises(UsageError, match="not a table byog exports"):
        read_table(tmp_path / "report.csv")


def test_run_tables_of_one_run_are_the_results_of_one_source(results: Results) -> None:
    (run,) = results.runs
    assert isinstance(run, RunTables) and isinstance(run.run_dir, RunDir)
    assert set(results.requests.source) == {run.source} == {"run"}
