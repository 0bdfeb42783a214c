"""``byog export RUN_OR_BUNDLE --to DIR``: the tables of ``byog.open`` as files, one per table.

Formats: ``csv`` (for spreadsheets: a string cell that would start a formula gets a leading ``'``,
``byog.core.safe_text.csv_cell``), ``parquet`` (the dtypes kept) and ``json`` (one array of
records per table; null for a missing value). ``read_table`` reads any of them back into the
documented dtypes, equal to the frame that was written. A bundle is verified first
(``byog.bundles.results``); one that does not verify writes nothing under ``--to``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from byog.analysis.frame_columns import TABLES, dtypes
from byog.analysis.frames import frame
from byog.bundles.results import Results
from byog.core.errors import UsageError
from byog.core.io import atomic_write_bytes
from byog.core.safe_text import csv_cell, csv_cell_read, one_line

if TYPE_CHECKING:
    import pandas as pd

Format = Literal["csv", "parquet", "json"]
FORMATS: tuple[Format, ...] = ("csv", "parquet", "json")


def _string_columns(table: str) -> list[str]:
    return [name for name, dtype in dtypes(table).items() if dtype == "string"]


def _json_value(value: Any) -> Any:
    """A cell as JSON: NA and NaN as null, numpy scalars as Python numbers."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def table_bytes(table: str, data: pd.DataFrame, fmt: Format) -> bytes:
    """One table in ``fmt``."""
    if fmt == "parquet":
        sink = io.BytesIO()
        data.to_parquet(sink, index=False)
        return sink.getvalue()
    if fmt == "csv":
        escaped = data.copy()
        for name in _string_columns(table):
            escaped[name] = escaped[name].map(csv_cell, na_action="ignore")
        text: str = escaped.to_csv(index=False, lineterminator="\n")
        return text.encode("utf-8")
    records = [{k: _json_value(v) for k, v in row.items()} for row in data.to_dict(orient="records")]
    return json.dumps(records, allow_nan=False, ensure_ascii=False, indent=0).encode("utf-8")


def write_tables(results: Results, out_dir: Path, fmt: Format) -> list[Path]:
    """Every table of ``results`` as ``<out_dir>/<table>.<fmt>``; each built before anything is written."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{one_line(fmt, 20)}' (formats: {', '.join(FORMATS)})")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--to {out_dir} is a file, not a folder")
    contents = {table: table_bytes(table, data, fmt) for table, data in results.tables.items()}
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for table, data in contents.items():
        path = out_dir / f"{table}.{fmt}"
        atomic_write_bytes(path, data)
        written.append(path)
    return written


def read_table(path: Path) -> pd.DataFrame:
    """A file ``write_tables`` wrote (``<table>.csv|parquet|json``), in the table's documented dtypes."""
    import pandas as pd

    table, fmt = path.stem, path.suffix.removeprefix(".")
    if table not in TABLES or fmt not in FORMATS:
        raise UsageError(f"{path.name} is not a table byog exports (<table>.<{'|'.join(FORMATS)}>)")
    if fmt == "parquet":
        return frame(table, pd.read_parquet(path))
    if fmt == "json":
        return frame(table, json.loads(path.read_text(encoding="utf-8")))
    data = pd.read_csv(path, dtype=dtypes(table), keep_default_na=False, na_values={c: [""] for c in dtypes(table)})
    for name in _string_columns(table):
        data[name] = data[name].map(csv_cell_read, na_action="ignore")
    return frame(table, data)
