"""A point's raw request rows as columns, for the bench formulas over many requests at once.

Why: verify recomputes every number of a bundle from its raw rows; with one Python object per
request and one Python loop per output token, a 25 MB bundle (~10^4 requests, ~3 * 10^6 chunk
timestamps) took seconds. Here the rows are the same values ``RequestRow`` holds, read from
parquet straight into numpy: scalar columns as arrays (and, for the few fields only validity
messages quote, as Python lists), the per-chunk lists flattened with offsets:

    chunk_t_ns[offsets[i]:offsets[i+1]]    the chunk arrival times of request i
    chunk_tokens[offsets[i]:offsets[i+1]]  the output tokens each of those chunks carried

``byog.analysis.metrics`` computes its per-request formulas on these columns with the same
floating-point operations, so every number is bit for bit what the per-request code gives
(tests/unit/analysis/test_request_columns.py holds the two against each other).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from byog.schemas.bench import RequestRow, read_request_table
from byog.schemas.tables import int_column, list_column


@dataclass(frozen=True)
class RequestColumns:
    request_index: np.ndarray  # int64, one per request
    wave: np.ndarray  # int64
    warmup: np.ndarray  # bool
    t_send_ns: np.ndarray  # int64
    n_out: np.ndarray  # int64
    failed: np.ndarray  # bool: the request has an error
    offsets: np.ndarray  # int64, len n + 1
    chunk_t_ns: np.ndarray  # int64, flat
    chunk_tokens: np.ndarray  # int64, flat
    error: list[str | None]  # as the rows hold them (validity quotes them)
    n_in: list[int | None]
    expected_n_in: list[int]
    usage_per_chunk: list[bool]
    # an interleaved pair's rows: each request's visit in the ABBA sequence (None: not interleaved)
    interleave_seq: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.request_index.size)

    @property
    def counts(self) -> np.ndarray:
        """Chunks per request."""
        return np.diff(self.offsets)

    @property
    def chunk_token_sums(self) -> np.ndarray:
        """sum(chunk_tokens) per request (int64, exact)."""
        running = np.zeros(self.chunk_tokens.size + 1, dtype=np.int64)
        np.cumsum(self.chunk_tokens, out=running[1:])
        sums: np.ndarray = running[self.offsets[1:]] - running[self.offsets[:-1]]
        return sums

    @property
    def ok(self) -> np.ndarray:
        """``RequestRow.ok`` per request: no error and at least one chunk."""
        return ~self.failed & (self.counts > 0)

    @property
    def first_ns(self) -> np.ndarray:
        """t_first per request (0 where a request has no chunk)."""
        has = self.counts > 0
        out = np.zeros(len(self), dtype=np.int64)
        out[has] = self.chunk_t_ns[self.offsets[:-1][has]]
        return out

    @property
    def last_ns(self) -> np.ndarray:
        has = self.counts > 0
        out = np.zeros(len(self), dtype=np.int64)
        out[has] = self.chunk_t_ns[self.offsets[1:][has] - 1]
        return out

    def take(self, index: np.ndarray) -> RequestColumns:
        """The requests at ``index`` (a boolean mask or positions), in that order."""
        positions = np.flatnonzero(index) if index.dtype == bool else np.asarray(index, dtype=np.int64)
        counts = self.counts[positions]
        offsets = np.zeros(positions.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        # Gather the chunk slices: for each kept request, its start, repeated over its chunks.
        starts = np.repeat(self.offsets[:-1][positions] - offsets[:-1], counts)
        flat = np.arange(int(offsets[-1]), dtype=np.int64) + starts
        pick = positions.tolist()
        return RequestColumns(
            request_index=self.request_index[positions],
            wave=self.wave[positions],
            warmup=self.warmup[positions],
            t_send_ns=self.t_send_ns[positions],
            n_out=self.n_out[positions],
            failed=self.failed[positions],
            offsets=offsets,
            chunk_t_ns=self.chunk_t_ns[flat],
            chunk_tokens=self.chunk_tokens[flat],
            error=[self.error[i] for i in pick],
            n_in=[self.n_in[i] for i in pick],
            expected_n_in=[self.expected_n_in[i] for i in pick],
            usage_per_chunk=[self.usage_per_chunk[i] for i in pick],
            interleave_seq=None if self.interleave_seq is None else self.interleave_seq[positions],
        )

    @classmethod
    def from_rows(cls, rows: Sequence[RequestRow]) -> RequestColumns:
        """Columns of rows already in memory (the sweep's live records)."""
        counts = [len(r.chunk_t_ns) for r in rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(
            request_index=np.array([r.request_index for r in rows], dtype=np.int64),
            wave=np.array([r.wave for r in rows], dtype=np.int64),
            warmup=np.array([r.warmup for r in rows], dtype=bool),
            t_send_ns=np.array([r.t_send_ns for r in rows], dtype=np.int64),
            n_out=np.array([r.n_out for r in rows], dtype=np.int64),
            failed=np.array([r.error is not None for r in rows], dtype=bool),
            offsets=offsets,
            chunk_t_ns=np.array([t for r in rows for t in r.chunk_t_ns], dtype=np.int64),
            chunk_tokens=np.array([k for r in rows for k in r.chunk_tokens], dtype=np.int64),
            error=[r.error for r in rows],
            n_in=[r.n_in for r in rows],
            expected_n_in=[r.expected_n_in for r in rows],
            usage_per_chunk=[r.usage_per_chunk for r in rows],
            interleave_seq=_interleave_seq(
                np.array([-1 if r.interleave_seq is None else r.interleave_seq for r in rows], dtype=np.int64)
            ),
        )


def read_request_columns(path: Path) -> RequestColumns:
    """A point's rows file (``bench/<server>/<point>.parquet``) as columns, in file order (the
    order ``read_request_rows`` gives: the writer sorts by request index), whatever its layout
    (``byog.schemas.bench.read_request_table``)."""
    table = read_request_table(path)
    offsets, chunk_t_ns = list_column(table, "chunk_t_ns")
    chunk_offsets, chunk_tokens = list_column(table, "chunk_tokens")
    if not np.array_equal(offsets, chunk_offsets):
        raise ValueError(f"{path.name}: chunk_t_ns and chunk_tokens differ in length for some request")

    def ints(name: str, default: int = 0) -> np.ndarray:
        if name not in table.column_names:
            return np.full(table.num_rows, default, dtype=np.int64)
        return int_column(table, name, default)

    def pylist(name: str, default: Any) -> list[Any]:
        return table.column(name).to_pylist() if name in table.column_names else [default] * table.num_rows

    error = pylist("error", None)
    return RequestColumns(
        request_index=ints("request_index"),
        wave=ints("wave"),
        warmup=ints("warmup").astype(bool),
        t_send_ns=ints("t_send_ns"),
        n_out=ints("n_out"),
        failed=np.array([e is not None for e in error], dtype=bool),
        offsets=offsets,
        chunk_t_ns=chunk_t_ns,
        chunk_tokens=chunk_tokens,
        error=error,
        n_in=pylist("n_in", None),
        expected_n_in=pylist("expected_n_in", 0),
        usage_per_chunk=pylist("usage_per_chunk", True),
        interleave_seq=_interleave_seq(ints("interleave_seq", -1)),
    )


def _interleave_seq(seq: np.ndarray) -> np.ndarray | None:
    """The column as the bootstrap reads it: None unless every request has its visit (-1: none)."""
    return seq if seq.size and (seq >= 0).all() else None
