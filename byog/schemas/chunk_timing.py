"""How a request row stores its chunks' arrival times: microsecond gaps (bench_row schema 4).

The client takes ``time.perf_counter_ns`` when a chunk arrives; a parquet row of schema <= 3 kept
those int64 nanoseconds (``chunk_t_ns``, ~6 bytes a chunk on disk). Schema 4 keeps
``chunk_gap_us``: each chunk's time rounded to the nearest microsecond on the absolute clock,
then differenced, the first one against the send time rounded the same way:

    gap_0 = us(t_0) - us(t_send)      (the TTFT, in microseconds)
    gap_i = us(t_i) - us(t_{i-1})     (the gap between chunk i-1 and chunk i)
    us(t) = floor((t + 500) / 1000)

so ``t_i = 1000 * (us(t_send) + gap_0 + ... + gap_i)`` comes back within 0.5 µs of what the
client took, with no error that grows along a request (every chunk is rounded once, on one grid
shared by all requests, so the order of chunks across a wave is kept). ``t_send_ns`` stays exact.
Gaps of 4-35 ms carry ~11 significant bits; parquet's BYTE_STREAM_SPLIT puts each byte of the
int64 in its own stream, so zstd drops the always-zero high bytes (benchmarks/chunk_encoding.py
measures the alternatives; docs/bundle-format.md holds the table).
"""

from __future__ import annotations

import numpy as np

NS_PER_US = 1000
# bench_row schema 4's column and its parquet encoding (the leaf of a list column is "<name>.list.element")
GAP_COLUMN = "chunk_gap_us"
GAP_ENCODING = "BYTE_STREAM_SPLIT"


def to_us(t_ns: np.ndarray) -> np.ndarray:
    """Nanoseconds to the nearest microsecond (half up), int64."""
    rounded: np.ndarray = (np.asarray(t_ns, dtype=np.int64) + NS_PER_US // 2) // NS_PER_US
    return rounded


def as_stored_ns(t_ns: list[int]) -> list[int]:
    """Chunk times as a stored row gives them back (each on the microsecond grid): what is computed
    from live rows and again from the stored ones (a point's stopping rule) then agrees."""
    return (to_us(np.asarray(t_ns, dtype=np.int64)) * NS_PER_US).tolist() if t_ns else []


def gaps_us(t_send_ns: np.ndarray, offsets: np.ndarray, chunk_t_ns: np.ndarray) -> np.ndarray:
    """Every request's chunk times (flat, request i at ``offsets[i]:offsets[i+1]``) as microsecond gaps."""
    counts = np.diff(offsets)
    previous = np.empty(chunk_t_ns.size, dtype=np.int64)
    previous[1:] = to_us(chunk_t_ns[:-1])
    starts = offsets[:-1][counts > 0]
    previous[starts] = to_us(t_send_ns[counts > 0])  # a request's first gap is from its send
    gaps: np.ndarray = to_us(chunk_t_ns) - previous
    return gaps


def chunk_t_ns(t_send_ns: np.ndarray, offsets: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """The inverse of ``gaps_us``: chunk times in ns (on the microsecond grid) from the gaps."""
    counts = np.diff(offsets)
    running = np.cumsum(np.asarray(gaps, dtype=np.int64))
    # the running sum restarts at each request: subtract what came before its first chunk
    before = np.zeros(offsets.size - 1, dtype=np.int64)
    has = counts > 0
    before[has] = running[offsets[:-1][has]] - gaps[offsets[:-1][has]]
    times: np.ndarray = (np.repeat(to_us(t_send_ns) - before, counts) + running) * NS_PER_US
    return times
