"""The pooled P50 of bootstrap resamples, without building the pools, equals np.percentile bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from byog.analysis.resampled_median import pooled_median_of_rows


@pytest.mark.parametrize(
    ("units", "per_unit", "drawn", "ties"),
    [
        (6, 4, 6, False),  # even pools: the mean of two order statistics, numpy's way
        (5, 3, 5, False),  # odd pools: one order statistic
        (7, 1, 7, False),  # one value per unit (per-request units)
        (9, 8, 9, True),  # many equal values (TPOTs rounded to the microsecond)
        (40, 64, 40, False),  # a B = 64 sweep of 40 waves
    ],
)
def test_equals_numpy_percentile_of_the_built_pools(units: int, per_unit: int, drawn: int, ties: bool) -> None:
    rng = np.random.default_rng(units * 100 + per_unit)
    arrays = [rng.lognormal(-4, 0.3, per_unit) for _ in range(units)]
    if ties:
        arrays = [np.round(a, 3) for a in arrays]
    rows = rng.integers(0, units, (500, drawn))
    medians = pooled_median_of_rows(arrays)
    assert medians is not None
    built = np.percentile(np.stack(arrays)[rows].reshape(len(rows), -1), 50, axis=1)
    assert np.array_equal(medians(rows), built)  # bit for bit, not approximately


def test_declines_what_it_cannot_do_cheaply() -> None:
    assert pooled_median_of_rows([np.ones(3), np.ones(4)]) is None  # units of different sizes
    assert pooled_median_of_rows([np.ones(1)] * 3000) is None  # 3000 x 3000 counts: too large, pools are built
