"""How often a perf CI covers the true ratio when launches differ: the simulation behind
docs/statistics.md §6, ``byog plan``'s coverage line, the unit test and
``benchmarks/launch_coverage.py``.

Model: two identical servers (true ratio 1), R launches per side, W waves per launch. The per-wave
statistic is 100 exp(b_l + e_lw), b_l ~ N(0, share sigma^2) per launch and e_lw ~ N(0, (1 - share)
sigma^2) per wave, sigma = 3%: ``share`` is the between-launch share of the per-wave variance
(the quantity ``perf_equivalence.between_launch_share`` estimates). A side's statistic is the mean
of its waves (a rate pooled over equal windows). Coverage is the fraction of trials whose 95% CI
holds 1:

- ``"bootstrap"`` (the old CI): percentile bootstrap, the waves with R = 1, launches then waves
  (``perf_equivalence.hierarchical_rows``' two stages) with R >= 2;
- ``"t"`` (the CI byog reports): ``perf_equivalence.launch_t_ci``'s formula, vectorised here;
  with R = 1 and no calibration it has no degree of freedom and falls back to the bootstrap,
  as byog does;
- ``calibration_launches`` (``"t"`` only): an earlier A/A calibration on the same fingerprint,
  that many launches per side of the same model, gives the launch variance (df = 2 (R_cal - 1)).

The t interval is scale-free in sigma and exact for this model; sigma matters only through the
lognormal's small skew.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from byog.analysis.stats import t_quantile

SIGMA = 0.03  # per-wave SD of ln(statistic), between and within launches together
LEVEL = 0.95
Method = Literal["bootstrap", "t"]


def _side(rng: np.random.Generator, trials: int, launches: int, waves: int, share: float) -> np.ndarray:
    """(trials, launches, waves) per-wave statistics of one server."""
    b = rng.normal(0.0, SIGMA * np.sqrt(share), (trials, launches, 1))
    e = rng.normal(0.0, SIGMA * np.sqrt(1.0 - share), (trials, launches, waves))
    return 100.0 * np.exp(b + e)


def _bootstrap_stat(side: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """(trials, resamples): the mean of a two-stage resample (launches, then each one's waves)."""
    trials, launches, waves = side.shape
    drawn = rng.integers(0, launches, (trials, resamples, launches))
    units = rng.integers(0, waves, (trials, resamples, launches, waves))
    means: np.ndarray = side[np.arange(trials)[:, None, None, None], drawn[..., None], units].mean(axis=(2, 3))
    return means


def _bootstrap_covers(cand: np.ndarray, base: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Per trial: does the percentile CI of mean(cand) / mean(base) hold 1?"""
    ratios = _bootstrap_stat(cand, rng, resamples) / _bootstrap_stat(base, rng, resamples)
    alpha = (1.0 - LEVEL) / 2 * 100
    low, high = np.percentile(ratios, [alpha, 100 - alpha], axis=1)
    covered: np.ndarray = (low <= 1.0) & (high >= 1.0)
    return covered


def _spread(side: np.ndarray) -> tuple[np.ndarray, int]:
    """Per trial, sum of squares of ln(launch mean) about its mean, and its degrees of freedom."""
    z = np.log(side.mean(axis=2))
    return ((z - z.mean(axis=1, keepdims=True)) ** 2).sum(axis=1), side.shape[1] - 1


def _t_covers(cand: np.ndarray, base: np.ndarray, calibration: list[np.ndarray]) -> np.ndarray:
    """Per trial: does the launch t interval hold 1? ``calibration``: the A/A's sides, if any."""
    parts = [_spread(side) for side in (cand, base, *calibration)]
    ss, df = sum(p[0] for p in parts), sum(p[1] for p in parts)
    se = np.sqrt(ss / df * (1.0 / cand.shape[1] + 1.0 / base.shape[1]))
    centre = np.log(cand.mean(axis=(1, 2)) / base.mean(axis=(1, 2)))
    covered: np.ndarray = np.abs(centre) <= t_quantile(0.5 + LEVEL / 2, df) * se
    return covered


def coverage(
    launches: int | tuple[int, int],
    waves: int,
    share: float,
    method: Method,
    trials: int = 2000,
    seed: int = 0,
    resamples: int = 400,
    calibration_launches: int = 0,
) -> float:
    """The fraction of ``trials`` identical-server comparisons whose 95% CI holds 1 (module
    docstring); ``launches``: per side, or (candidate, baseline)."""
    r_c, r_b = (launches, launches) if isinstance(launches, int) else launches
    rng = np.random.default_rng([seed, r_c, r_b, waves, round(share * 1000), calibration_launches])
    cand, base = (_side(rng, trials, r, waves, share) for r in (r_c, r_b))
    if method == "t" and (max(r_c, r_b) >= 2 or calibration_launches >= 2):
        calibration = [
            _side(rng, trials, calibration_launches, waves, share) for _ in range(2 if calibration_launches else 0)
        ]
        return float(_t_covers(cand, base, calibration).mean())
    covered = [  # in chunks: trials x resamples x R x W indices per side
        _bootstrap_covers(cand[start : start + 100], base[start : start + 100], rng, resamples)
        for start in range(0, trials, 100)
    ]
    return float(np.concatenate(covered).mean())
