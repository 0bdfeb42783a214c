"""The P50 of many bootstrap pools at once, without building the pools.

A bootstrap resample of a batch point draws whole units (waves of B values each) with
replacement; its statistic is the P50 of the drawn units' values pooled. Building each pool and
partitioning it (``np.percentile`` over a resamples x pool matrix) costs most of ``byog verify``'s
time on a large bundle. Here the values are sorted once; a resample is its unit counts; the k-th
smallest pooled value is found by a binary search over the sorted values, counting for each
candidate how many pooled values lie at or below it (counts . below[j]). Both order statistics
are then combined exactly as ``np.percentile(..., 50)`` combines them (numpy's linear method and
its ``_lerp``), so the result is bit for bit the same
(``tests/unit/analysis/test_resampled_median.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

# below[j, u] is an (all values x units) matrix; past this many cells there is no shortcut (None):
# the caller builds the pools.
MAX_BELOW_CELLS = 4_000_000


def pooled_median_of_rows(arrays: Sequence[np.ndarray]) -> Callable[[np.ndarray], np.ndarray] | None:
    """rows (resamples x drawn unit indices) -> the P50 of each row's pooled values; units of equal size.

    None when the units differ in size or the sorted-count matrix would be too large.
    """
    per_unit = arrays[0].size if arrays else 0
    if not per_unit or any(a.size != per_unit for a in arrays) or per_unit * len(arrays) ** 2 > MAX_BELOW_CELLS:
        return None
    values = np.concatenate(arrays)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    owner = np.repeat(np.arange(len(arrays)), per_unit)[order]
    below = np.cumsum(
        np.eye(len(arrays), dtype=np.int64)[owner], axis=0
    )  # below[j, u]: unit u's among the j+1 smallest

    def medians(rows: np.ndarray) -> np.ndarray:
        n_rows, drawn = rows.shape
        counts = np.zeros((n_rows, len(arrays)), dtype=np.int64)
        np.add.at(counts, (np.repeat(np.arange(n_rows), drawn), rows.ravel()), 1)
        virtual = (drawn * per_unit - 1) * 0.5  # numpy's linear method at q = 0.5
        first = math.floor(virtual)
        low = _kth_smallest(counts, below, ordered, first)
        high = _kth_smallest(counts, below, ordered, first + 1) if virtual > first else low
        gamma = virtual - first
        # numpy's _lerp, both branches, for the same last bits
        median: np.ndarray = high - (high - low) * (1 - gamma) if gamma >= 0.5 else low + (high - low) * gamma
        return median

    return medians


def _kth_smallest(counts: np.ndarray, below: np.ndarray, ordered: np.ndarray, k: int) -> np.ndarray:
    """Per row, the value of rank k (0-based) of its pool: the first j with more than k pooled values <= ordered[j]."""
    low = np.zeros(len(counts), dtype=np.int64)
    high = np.full(len(counts), len(ordered) - 1, dtype=np.int64)
    while (low < high).any():
        mid = (low + high) // 2
        enough = np.einsum("ru,ru->r", counts, below[mid]) > k
        high = np.where(enough, mid, high)
        low = np.where(enough, low, mid + 1)
    return ordered[low]
