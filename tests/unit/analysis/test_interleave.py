"""The ABBA order, and the block bootstrap of an interleaved pair's ratio."""

from __future__ import annotations

import numpy as np

from byog.analysis.bench_summary import Unit, abba_paired, bootstrap_ratios, stat_for
from byog.analysis.interleave import abba_order, follows_wake, side_of, swaps_in


def test_abba_order_alternates_who_goes_first_each_block() -> None:
    assert "".join(abba_order(4)) == "ABBAABBA"
    assert [side_of(s) for s in range(8)] == list("ABBAABBA")


def test_a_visit_follows_a_wake_when_the_other_side_ran_before_it() -> None:
    # A B B A A B B A: visits 0, 1, 3, 5, 7 follow a swap (or the start); 2, 4, 6 continue their side
    assert [follows_wake(s) for s in range(8)] == [True, True, False, True, False, True, False, True]
    assert swaps_in(4) == 4  # before visits 1, 3, 5, 7


def _wave(tok_s: float, seq: int | None) -> Unit:
    unit = Unit(np.array([1 / tok_s]), np.array([0.1]), np.array([]), (0, 1_000_000_000), int(tok_s), 1.0, 1)
    unit.seq = seq
    return unit


def _drifting_pair(paired: bool) -> tuple[list[Unit], list[Unit]]:
    """Eight blocks; the machine's speed drifts from 100 to 30 tok/s over them, the candidate is 10 % faster
    in every block. Side A (baseline) runs visits 2k or 2k+1 of block k, B the other."""
    base, cand = [], []
    for k, speed in enumerate(np.linspace(100.0, 30.0, 8)):
        a_seq = 2 * k if k % 2 == 0 else 2 * k + 1
        b_seq = 2 * k + 1 if k % 2 == 0 else 2 * k
        base.append(_wave(speed, a_seq if paired else None))
        cand.append(_wave(1.1 * speed, b_seq if paired else None))
    return cand, base


def test_the_bootstrap_resamples_abba_blocks_together() -> None:
    stat = stat_for("decode_tok_s", "batch")
    cand, base = _drifting_pair(paired=True)
    assert abba_paired(cand, base)
    ratios = bootstrap_ratios(cand, base, stat, [1, 2])
    assert ratios is not None
    # every resample takes both waves of the blocks it draws: the drift cancels, the ratio is the 1.1 of each block
    assert np.allclose(ratios, 1.1, rtol=1e-3)
    cand_u, base_u = _drifting_pair(paired=False)
    assert not abba_paired(cand_u, base_u)
    unpaired = bootstrap_ratios(cand_u, base_u, stat, [1, 2])
    assert unpaired is not None and np.percentile(unpaired, 97.5) - np.percentile(unpaired, 2.5) > 0.2


def test_blocks_in_different_orders_are_not_paired() -> None:
    cand, base = _drifting_pair(paired=True)
    assert not abba_paired(cand, list(reversed(base)))
    assert not abba_paired(cand[:-1], base)
