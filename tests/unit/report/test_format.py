"""Markdown tables that fit GitHub's column (report format 6 on), and older formats as they were."""

from __future__ import annotations

from byog.report.format import COLUMN_PX, cell_px, number_style, table
from byog.report.plots import EVAL_DELTAS

HEADER = ["Server", "Point", *[f"metric {i}" for i in range(8)]]
ROWS = [["stock", "decode-b64-isl1-osl1000", *[f"{1000 + i}.5 [990.1, 1010.9]" for i in range(8)]]]


def _tables(lines: list[str]) -> list[list[str]]:
    tables: list[list[str]] = [[]]
    for line in lines:
        if line:
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    return [t for t in tables if t]


def test_a_table_wider_than_the_column_is_split_each_part_keyed_by_server_and_point() -> None:
    parts = _tables(table(HEADER, ROWS))
    assert len(parts) > 1
    for part in parts:
        header = part[0].strip("| ").split(" | ")
        assert header[:2] == ["Server", "Point"]
        assert sum(cell_px(c) for c in header) <= COLUMN_PX
        assert part[2].startswith("| stock | decode-b64-isl1-osl1000 | ")
        assert max(sum(cell_px(c) for c in row.strip("| ").split(" | ")) for row in part) <= COLUMN_PX
    metrics = [h for part in parts for h in part[0].strip("| ").split(" | ")[2:]]
    assert metrics == HEADER[2:]  # every column once, in order


def test_a_narrow_table_and_older_formats_stay_one_table() -> None:
    assert len(_tables(table(["Server", "tok/s"], [["stock", "12.5"]]))) == 1
    with number_style(5):
        assert len(_tables(table(HEADER, ROWS))) == 1  # format 5 re-renders byte for byte


def test_the_eval_delta_plot_names_the_verdicts_ci_level_and_old_formats_keep_theirs() -> None:
    assert "90% CI" in EVAL_DELTAS.alt_in(6) and "TOST" in EVAL_DELTAS.alt_in(6)
    assert EVAL_DELTAS.alt_in(5) == "eval score deltas with their 95% CI and the margin"
