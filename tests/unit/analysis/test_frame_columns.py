"""The column reference of docs/analysis.md is the one generated from the spec, and every formula a
column names is a section of docs/metrics.md."""

from __future__ import annotations

from pathlib import Path

from byog.analysis.frame_columns import TABLES, counter_column, markdown

DOCS = Path(__file__).resolve().parents[3] / "docs"
MARKER = "<!-- columns: generated -->\n\n"


def test_the_documented_columns_are_the_spec() -> None:
    doc = (DOCS / "analysis.md").read_text(encoding="utf-8")
    assert MARKER in doc
    assert doc.split(MARKER, 1)[1] == markdown().rstrip() + "\n", "regenerate docs/analysis.md's columns section"


def test_every_formula_is_a_section_of_its_doc() -> None:
    headings = {
        line.lstrip("#").strip() for line in (DOCS / "metrics.md").read_text().splitlines() if line.startswith("#")
    }
    for columns in TABLES.values():
        for column in columns:
            if column.formula.startswith("docs/"):
                assert (DOCS.parent / column.formula).is_file(), column
            elif column.formula:
                assert column.formula in headings, column


def test_column_names_are_unique_per_table() -> None:
    for table, columns in TABLES.items():
        names = [c.name for c in columns]
        assert len(names) == len(set(names)), table
    assert counter_column("vllm:generation_tokens_total") == "delta_generation_tokens_total"
