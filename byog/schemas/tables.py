"""Parquet files of records: the pyarrow schema is derived from the record's pydantic model.

A row model declares its columns once (field order = column order); a field whose arrow type is
not the default for its Python type says so with ``Field(json_schema_extra={"arrow": "int32"})``.
Writing is atomic and row-ordered, so the same rows give the same bytes.
"""

from __future__ import annotations

import io
import types
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel

from byog.core.io import atomic_write_bytes

if TYPE_CHECKING:
    import pyarrow as pa

Row = TypeVar("Row", bound=BaseModel)

_SCALARS = {int: "int64", float: "float64", str: "string", bool: "bool_"}


# the codecs pyarrow writes parquet with
Compression = Literal["gzip", "brotli", "lz4", "zstd", "snappy", "none"]


def _non_null(annotation: Any) -> Any:
    """``X | None`` -> X (nullability is every arrow field's default)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _named_arrow_type(name: str) -> pa.DataType:
    """``pyarrow.<name>()``, e.g. ``int64`` or ``large_string``."""
    import pyarrow as pa

    made = getattr(pa, name)()
    if not isinstance(made, pa.DataType):
        raise TypeError(f"pyarrow.{name}() is not an arrow type")
    return made


def _arrow_type(annotation: Any, override: str | None) -> pa.DataType:
    import pyarrow as pa

    if override:
        return _named_arrow_type(override)
    annotation = _non_null(annotation)
    if typing.get_origin(annotation) is list:
        (inner,) = typing.get_args(annotation)
        return pa.list_(_named_arrow_type(_SCALARS[inner]))
    return _named_arrow_type(_SCALARS[annotation])


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The parquet schema of a row model: one column per field, in declaration order."""
    import pyarrow as pa

    fields = []
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        fields.append(pa.field(name, _arrow_type(info.annotation, extra.get("arrow"))))  # type: ignore[arg-type]
    return pa.schema(fields)


def columns(model: type[BaseModel]) -> tuple[str, ...]:
    return tuple(model.model_fields)


def write_rows(
    path: Path,
    model: type[BaseModel],
    rows: Iterable[BaseModel | dict[str, Any]],
    *,
    compression: Compression = "snappy",
) -> None:
    """Write rows (models or plain dicts of the model's fields) atomically as one parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = [r.model_dump() if isinstance(r, BaseModel) else r for r in rows]
    table = pa.Table.from_pylist(data, schema=arrow_schema(model))
    sink = io.BytesIO()
    pq.write_table(table, sink, compression=compression)
    atomic_write_bytes(path, sink.getvalue())


def read_rows(path: Path, model: type[Row]) -> list[Row]:
    """Rows as model instances, unvalidated (verify's schema check validates bundle files first)."""
    import pyarrow.parquet as pq

    return [model.model_construct(**row) for row in pq.ParquetFile(path).read().to_pylist()]


def read_columns(path: Path, names: Sequence[str]) -> dict[str, list[Any]]:
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read(
        columns=list(names)
    )  # ParquetFile: read_table would import pyarrow.dataset and pandas (0.4 s)
    return {name: table.column(name).to_pylist() for name in names}
