"""The bootstrap's resampled unit indices drawn in one call are the ones the row-by-row draws give
(the same stream, so the same CIs as bundles made before the change)."""

from __future__ import annotations

import numpy as np

from byog.analysis.bench_summary import resample_rows


def _row_by_row(seed: list[int], n_cand: int, n_base: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cand = np.empty((resamples, n_cand), dtype=np.int64)
    base = np.empty((resamples, n_base), dtype=np.int64)
    for r in range(resamples):
        cand[r] = rng.integers(0, n_cand, n_cand)
        base[r] = rng.integers(0, n_base, n_base)
    return cand, base


def test_one_call_draws_what_row_by_row_draws_give() -> None:
    for n in (2, 3, 4, 5, 7, 16, 33, 100, 257):
        for seed in ([1234, 1], [7, 2**31 + 5]):
            fast = resample_rows(seed, n, n, 1000)
            slow = _row_by_row(seed, n, n, 1000)
            assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1]), (n, seed)
    uneven = resample_rows([1, 2], 3, 5, 50)
    assert all(np.array_equal(a, b) for a, b in zip(uneven, _row_by_row([1, 2], 3, 5, 50), strict=True))
