"""Monte Carlo of the sequential paired gate (``byog.analysis.group_sequential``), vectorised.

Greedy single-pass items: d_i is +100, -100 or 0 points. At discordance q (P(d_i != 0)) and a true
difference delta (points), P(d_i = +100) = (q + delta/100) / 2 and P(d_i = -100) = (q - delta/100) / 2.
Each trial draws the counts of +100 and -100 between looks (a multinomial per segment), so a look's
statistics come from counts, and every trial of a cell runs at once in numpy. ``method``: the
statistic the gate judges by, "tango-score" (what byog uses on such binary items) or "paired-t"
(the paired t it used before, kept to show the difference).

The design's n per cell is the least multiple of 10 where the one-look TOST has 90% power at
delta = 0 (normal approximation, sd = 100 sqrt(q)): each cell is a design a plan would choose.

- false equivalence: P(verdict equivalent | delta = margin), the TOST's error (at most alpha);
- difference level: P(the difference boundary is crossed at some look | delta = 0), the two-sided
  test of d = 0 on its own (alpha);
- false difference: P(verdict different | delta = 0) (the verdict also needs |d| > margin);
- items saved: 1 - E[items at the stopping look] / n, at delta = 0 and at delta = margin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from byog.analysis import group_sequential as gs
from byog.analysis.stats import ALPHA, score_stops, tango_z
from byog.schemas.evals import PairedMethod


@dataclass(frozen=True)
class Cell:
    discordance: float
    n: int
    false_equivalence: float
    fixed_false_equivalence: float  # the one-look gate at the same n
    difference_level: float
    fixed_difference_level: float
    false_difference: float
    fixed_false_difference: float
    power: float  # P(equivalent | delta = 0)
    fixed_power: float
    items_saved_equal: float  # delta = 0
    items_saved_margin: float  # delta = margin


def design_n(discordance: float, margin: float) -> int:
    from scipy.special import ndtri

    z = float(ndtri(1 - ALPHA)) + float(ndtri(0.95))
    return 10 * math.ceil((z * 100.0 * math.sqrt(discordance) / margin) ** 2 / 10)


@dataclass(frozen=True)
class _Run:
    verdict: NDArray[np.int8]  # 1 equivalent, -1 different, 0 inconclusive
    items: NDArray[np.int64]  # items seen at the stopping look
    crossed_zero: NDArray[np.bool_]  # the difference boundary crossed at some look (no other stop)


def _run(
    rng: np.random.Generator,
    q: float,
    delta: float,
    margin: float,
    sizes: list[int],
    design: gs.SequentialDesign,
    trials: int,
    method: PairedMethod,
) -> _Run:
    plus, minus = (q + delta / 100.0) / 2.0, (q - delta / 100.0) / 2.0
    verdict = np.zeros(trials, dtype=np.int8)
    items = np.full(trials, sizes[-1], dtype=np.int64)
    stopped = np.zeros(trials, dtype=bool)
    crossed = np.zeros(trials, dtype=bool)
    counts = np.zeros((trials, 3), dtype=np.int64)
    before = 0
    for size, (e_b, c_b) in zip(sizes, gs.look_bounds(sizes, design, method), strict=True):
        counts += rng.multinomial(size - before, [plus, minus, 1.0 - plus - minus], size=trials)
        before = size
        if method == "tango-score":
            equivalent, different = score_stops(counts[:, 0], counts[:, 1], size, margin, e_b, c_b)
            crossed |= np.abs(tango_z(counts[:, 0], counts[:, 1], size, 0.0)) >= c_b  # McNemar's z
        else:
            d = 100.0 * (counts[:, 0] - counts[:, 1]) / size
            var = (1e4 * (counts[:, 0] + counts[:, 1]) - size * d * d) / (size - 1)
            se = gs.floored_se(np.sqrt(np.maximum(var, 0.0)), size, 100.0)
            equivalent, different = gs.stops(d, se, margin, e_b, c_b)
            crossed |= np.abs(d) / se >= c_b
        stop = ~stopped & (equivalent | different)
        verdict[stop & equivalent] = 1
        verdict[stop & different] = -1
        items[stop] = size
        stopped |= stop
    return _Run(verdict, items, crossed)


def simulate(
    discordance: float,
    margin: float,
    fractions: tuple[float, ...],
    trials: int,
    seed: int,
    spending: gs.Spending = "obf",
    method: PairedMethod = "tango-score",
) -> Cell:
    """One cell: the sequential design and the one-look gate, at delta = 0 and delta = margin."""
    rng = np.random.default_rng(seed)
    n = design_n(discordance, margin)
    sizes = gs.look_sizes(n, fractions)
    design = gs.SequentialDesign(fractions=fractions, spending=spending)
    fixed = gs.SequentialDesign(fractions=(1.0,))
    equal = _run(rng, discordance, 0.0, margin, sizes, design, trials, method)
    at_margin = _run(rng, discordance, margin, margin, sizes, design, trials, method)
    fixed_equal = _run(rng, discordance, 0.0, margin, [n], fixed, trials, method)
    fixed_margin = _run(rng, discordance, margin, margin, [n], fixed, trials, method)
    return Cell(
        discordance=discordance,
        n=n,
        false_equivalence=float(np.mean(at_margin.verdict == 1)),
        fixed_false_equivalence=float(np.mean(fixed_margin.verdict == 1)),
        difference_level=float(np.mean(equal.crossed_zero)),
        fixed_difference_level=float(np.mean(fixed_equal.crossed_zero)),
        false_difference=float(np.mean(equal.verdict == -1)),
        fixed_false_difference=float(np.mean(fixed_equal.verdict == -1)),
        power=float(np.mean(equal.verdict == 1)),
        fixed_power=float(np.mean(fixed_equal.verdict == 1)),
        items_saved_equal=1.0 - float(np.mean(equal.items)) / n,
        items_saved_margin=1.0 - float(np.mean(at_margin.items)) / n,
    )
