"""Parquet files of records: the pyarrow schema is derived from the record's pydantic model.

A row model declares its columns once (field order = column order); a field whose arrow type is
not the default for its Python type says so with ``Field(json_schema_extra={"arrow": "int32"})``.
Writing is atomic and row-ordered, so the same rows give the same bytes. A file whose layout
changed across schema versions records its version in the parquet key-value metadata
(``byog.schema_version``); a file without it predates that (``file_version``).
"""

from __future__ import annotations

import io
import types
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel

from byog.core.io import atomic_write_bytes

if TYPE_CHECKING:
    import pyarrow as pa

Row = TypeVar("Row", bound=BaseModel)

_SCALARS = {int: "int64", float: "float64", str: "string", bool: "bool_"}


# the codecs pyarrow writes parquet with
Compression = Literal["gzip", "brotli", "lz4", "zstd", "snappy", "none"]

VERSION_KEY = b"byog.schema_version"


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
    version: int | None = None,
    encodings: dict[str, str] | None = None,
) -> None:
    """Write rows (models or plain dicts of the model's fields) atomically as one parquet file.

    ``version``: recorded as the file's schema version; ``encodings``: column -> parquet encoding
    (e.g. BYTE_STREAM_SPLIT) for the columns that are not dictionary-encoded."""
    import pyarrow as pa

    data = [r.model_dump() if isinstance(r, BaseModel) else r for r in rows]
    schema = arrow_schema(model)
    if version is not None:
        schema = schema.with_metadata({VERSION_KEY: str(version).encode()})
    table = pa.Table.from_pylist(data, schema=schema)
    atomic_write_bytes(path, table_bytes(table, compression=compression, encodings=encodings or {}))


def table_bytes(
    table: pa.Table, *, compression: Compression, level: int | None = None, encodings: dict[str, str]
) -> bytes:
    """One parquet file of ``table``: its metadata kept, ``encodings`` (column -> encoding) applied."""
    import pyarrow.parquet as pq

    leaves = {_leaf_path(table.schema.field(name)): encoding for name, encoding in encodings.items()}
    dictionary = [_leaf_path(f) for f in table.schema if f.name not in encodings] if encodings else True
    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        compression=compression,
        compression_level=level,
        use_dictionary=dictionary,  # type: ignore[arg-type]  # (the stubs say bool; pyarrow takes column paths too)
        column_encoding=leaves or None,
    )
    return sink.getvalue()


def _leaf_path(field: pa.Field[pa.DataType]) -> str:
    """A column's parquet leaf: ``name``, or ``name.list.element`` for a list column."""
    import pyarrow as pa

    return f"{field.name}.list.element" if pa.types.is_list(field.type) else field.name


def encodings_of(data: bytes) -> dict[str, str]:
    """The columns of a parquet file written with a non-default encoding (``write_rows``'s ``encodings``)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    if meta.num_row_groups == 0:
        return {}
    found: dict[str, str] = {}
    group = meta.row_group(0)
    for i in range(group.num_columns):
        column = group.column(i)
        for encoding in ("BYTE_STREAM_SPLIT", "DELTA_BINARY_PACKED"):
            if encoding in column.encodings:
                found[column.path_in_schema.split(".")[0]] = encoding
    return found


def recompress(data: bytes, *, level: int) -> bytes:
    """A parquet file re-encoded with zstd at ``level``: the same table, metadata and column encodings."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(io.BytesIO(data)).read(use_threads=False)
    return table_bytes(table, compression="zstd", level=level, encodings=encodings_of(data))


def file_version(metadata: dict[bytes, bytes] | None) -> int | None:
    """The schema version a parquet file records (None: none, a file from before versions were written).

    Raises ValueError when the recorded value is not a positive integer."""
    raw = (metadata or {}).get(VERSION_KEY)
    if raw is None:
        return None
    text = raw.decode("ascii", errors="replace")
    if not text.isdigit() or int(text) < 1 or len(text) > 9:
        raise ValueError(f"its {VERSION_KEY.decode()} is {text[:20]!r}, not a positive integer")
    return int(text)


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


# --- columns as numpy, read from arrow buffers -------------------------------------------------


def _bits(buffer: Any, offset: int, length: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")[offset : offset + length].astype(
        bool
    )


def _numpy(array: Any, default: int = 0) -> np.ndarray:
    """An int64/bool arrow array as numpy, read from its buffers (arrow's own to_numpy imports pandas,
    0.4 s); nulls become ``default``. Another type (a foreign writer's) goes through Python values."""
    import pyarrow as pa

    values: np.ndarray
    if pa.types.is_int64(array.type):
        values = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array)].copy()
    elif pa.types.is_boolean(array.type):
        values = _bits(array.buffers()[1], array.offset, len(array))
    else:
        return np.array([default if v is None else v for v in array.to_pylist()], dtype=np.int64)
    if array.null_count:
        values[~_bits(array.buffers()[0], array.offset, len(array))] = default
    return values


def _column(table: Any, name: str) -> Any:
    """One column as a single arrow array."""
    import pyarrow as pa

    column = table.column(name)
    return (
        column.chunk(0)
        if column.num_chunks == 1
        else pa.concat_arrays(column.chunks)
        if column.num_chunks
        else pa.array([], type=column.type)
    )


def list_column(table: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, flat int64 values) of a list<int64> column; a null list counts as empty."""
    import pyarrow as pa

    column = _column(table, name)
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        raise ValueError(f"column {name} is {column.type}, not a list")
    width = np.int64 if pa.types.is_large_list(column.type) else np.int32
    offsets = np.frombuffer(column.buffers()[1], dtype=width)[column.offset : column.offset + len(column) + 1].astype(
        np.int64
    )
    # (a null list's two offsets are equal: it reads as empty)
    flat = _numpy(column.values)
    return offsets - offsets[0], flat[offsets[0] : offsets[-1]]


def list_array(offsets: np.ndarray, values: np.ndarray) -> pa.ListArray[Any]:
    """A list<int64> arrow array from (offsets, flat values), ``list_column``'s inverse, built on their
    buffers (``pa.array`` imports pandas, 0.4 s, to ask whether they are a pandas object); ValueError
    when an offset does not fit int32."""
    import pyarrow as pa

    if len(offsets) and (int(offsets.min()) < 0 or int(offsets.max()) > np.iinfo(np.int32).max):
        raise ValueError("a list offset does not fit int32")
    starts = np.ascontiguousarray(offsets, dtype=np.int32)
    flat = np.ascontiguousarray(values, dtype=np.int64)
    arrays: list[Any] = [
        pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data.data)])
        for arrow_type, data in ((pa.int32(), starts), (pa.int64(), flat))
    ]
    return pa.ListArray.from_arrays(*arrays)


def int_column(table: Any, name: str, default: int = 0) -> np.ndarray:
    """An integer or bool column of ``table`` as int64/bool numpy; nulls become ``default``."""
    return _numpy(_column(table, name), default)
