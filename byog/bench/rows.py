"""Raw request rows <-> parquet (columns: ``byog.schemas.bench.BenchRow``)."""

from __future__ import annotations

import io
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from byog.bench.client import RequestRecord
from byog.ioutil import atomic_write_bytes


def _schema():  # type: ignore[no-untyped-def]
    import pyarrow as pa

    return pa.schema([
        ("request_index", pa.int64()), ("wave", pa.int64()), ("warmup", pa.bool_()), ("expected_n_in", pa.int64()),
        ("t_send_ns", pa.int64()), ("chunk_t_ns", pa.list_(pa.int64())), ("chunk_tokens", pa.list_(pa.int64())),
        ("n_in", pa.int64()), ("n_out", pa.int64()), ("error", pa.string()), ("usage_per_chunk", pa.bool_()),
    ])


def write_rows(path: Path, records: Sequence[RequestRecord]) -> None:
    """Write the rows atomically, ordered by request index (deterministic bytes for the same rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema()
    rows = [asdict(r) for r in sorted(records, key=lambda r: r.request_index)]
    table = pa.Table.from_pylist(rows, schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    atomic_write_bytes(path, sink.getvalue())


def read_rows(path: Path) -> list[RequestRecord]:
    import pyarrow.parquet as pq

    return [RequestRecord(**row) for row in pq.read_table(path).to_pylist()]
