"""The column formulas (byog.analysis.metrics *_columns, RequestColumns) give bit for bit what the
per-request formulas give, on rows with every irregularity a real sweep can record: failed
requests, empty chunk lists, chunks of 0 or several tokens, n_out < 2, warm-up requests, values
near the top of the nanosecond clock; and a parquet round trip keeps them (on the microsecond
grid schema 4 stores)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np

from byog.analysis import metrics as m
from byog.analysis.request_columns import RequestColumns, read_request_columns
from byog.schemas.bench import RequestRow, read_request_rows, write_request_rows
from byog.schemas.chunk_timing import to_us
from tests.support import metrics_oracle as oracle


def _rows(seed: int, n: int = 300) -> list[RequestRow]:
    rng = random.Random(seed)
    rows = []
    base = rng.choice([0, 10**9, 2**52])  # nanosecond clocks far from zero too
    for _ in range(n):
        send = base + rng.randrange(10**9)
        chunks = rng.choice([0, 1, 2, 5, 40])
        times, t = [], send + rng.randrange(1, 10**8)
        for _ in range(chunks):
            times.append(t)
            t += rng.randrange(0, 5 * 10**7)  # equal timestamps happen
        tokens = [rng.choice([0, 1, 1, 1, 2, 3]) for _ in range(chunks)]
        error = "HTTP 500" if rng.random() < 0.05 else None
        rows.append(
            RequestRow(
                request_index=rng.randrange(10**6),
                wave=rng.randrange(4),
                warmup=rng.random() < 0.2,
                expected_n_in=32,
                t_send_ns=send,
                chunk_t_ns=times,
                chunk_tokens=tokens,
                n_in=rng.choice([32, 31, None]),
                n_out=sum(tokens) if rng.random() < 0.9 else rng.randrange(3),
                error=error,
                usage_per_chunk=rng.random() < 0.95,
            )
        )
    return rows


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b, strict=True))


def _check(rows: list[RequestRow], c: RequestColumns) -> None:
    ok = [r for r in rows if r.ok]
    assert _same(m.ttft_s_columns(c).tolist(), [m.ttft_s(r) for r in ok])
    assert _same(m.tpot_s_columns(c).tolist(), [x for x in (m.tpot_s(r) for r in rows) if x is not None])
    assert _same(m.e2e_latency_s_columns(c).tolist(), [m.e2e_latency_s(r) for r in ok])
    assert _same(m.itl_s_columns(c).tolist(), m.pooled_itl_s(rows))
    assert _same(m.itl_mean_s_columns(c), [x for x in (oracle.itl_mean_s(r) for r in rows) if x is not None])
    assert m.output_tok_s_columns(c) == m.output_tok_s(rows)
    sends = sorted(r.t_send_ns for r in rows)
    for start, end in ((sends[0], sends[-1]), (sends[len(sends) // 3], sends[len(sends) // 2])):
        assert m.achieved_concurrency_columns(c, start, end) == oracle.achieved_concurrency(rows, start, end)
    for wave in range(4):
        members = [r for r in rows if r.wave == wave]
        sub = c.take(c.wave == wave)
        assert m.decode_window_ns_columns(sub) == oracle.decode_window_ns(members)
        window = (sends[0], sends[-1] + 10**8)
        assert m.tokens_in_window_columns(sub, window) == oracle.tokens_in_window(members, window)
        assert m.steps_in_window_columns(sub, window) == oracle.steps_in_window(members, window)
        good = [r for r in members if r.ok]
        if good and all(r.ok for r in members) and len(members) > 0:
            assert m.decode_window_ns_columns(
                c.take(np.array([r.wave == wave and r.ok for r in rows]))
            ) == oracle.decode_window_ns(good)


def test_column_formulas_are_bit_for_bit_the_per_request_formulas() -> None:
    for seed in range(40):
        rows = _rows(seed)
        _check(rows, RequestColumns.from_rows(rows))
        measured = [r for r in rows if not r.warmup]
        _check(measured, RequestColumns.from_rows(rows).take(np.array([not r.warmup for r in rows])))


def _on_microseconds(row: RequestRow) -> RequestRow:
    """The row as schema 4 keeps it: each chunk time at the nearest microsecond."""
    return row.model_copy(update={"chunk_t_ns": [int(t) for t in to_us(np.array(row.chunk_t_ns)) * 1000]})


def test_parquet_round_trip_gives_the_same_columns_on_the_microsecond_grid(tmp_path: Path) -> None:
    written = sorted(_rows(3), key=lambda r: r.request_index)
    path = tmp_path / "rows.parquet"
    write_request_rows(path, written)
    read = read_request_columns(path)
    assert np.abs(read.chunk_t_ns - RequestColumns.from_rows(written).chunk_t_ns).max() <= 500
    rows = [_on_microseconds(r) for r in written]
    direct = RequestColumns.from_rows(rows)
    for name in (
        "request_index",
        "wave",
        "warmup",
        "t_send_ns",
        "n_out",
        "failed",
        "offsets",
        "chunk_t_ns",
        "chunk_tokens",
    ):
        assert np.array_equal(getattr(read, name), getattr(direct, name)), name
    for name in ("error", "n_in", "expected_n_in", "usage_per_chunk"):
        assert getattr(read, name) == getattr(direct, name), name
    _check(rows, read)
    assert read_request_rows(path) == rows
