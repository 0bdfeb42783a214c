"""The ABBA order of an interleaved pair: which side runs each visit, and which visits follow a wake-up.

A pair's point is measured in blocks of two visits, one per side; block k runs A then B when k is
even and B then A when it is odd, so the sequence is A B | B A | A B | B A ... . A drift that is
linear in time then lands on both sides equally over every two blocks, and each block's two waves
are neighbours in time (the bootstrap resamples blocks: ``bench_summary.abba_paired``). The
schedule and the summary both read it from here, so the rows' ``interleave_side`` can be checked
against ``interleave_seq``.
"""

from __future__ import annotations

from typing import Literal

Side = Literal["A", "B"]


def side_of(seq: int) -> Side:
    """The side of visit ``seq`` (0, 1, 2, ...) of the ABBA sequence."""
    block, second = divmod(seq, 2)
    first: Side = "A" if block % 2 == 0 else "B"
    if not second:
        return first
    return "B" if first == "A" else "A"


def abba_order(blocks: int) -> list[Side]:
    """The sides of ``blocks`` blocks of visits, in order: A B B A A B ... (2 x blocks visits)."""
    return [side_of(seq) for seq in range(2 * blocks)]


def follows_wake(seq: int) -> bool:
    """Whether visit ``seq`` starts right after its server was woken: the first visit, or one whose
    previous visit was the other side's. The rest continue a visit of the same side (no swap between)."""
    return seq == 0 or side_of(seq - 1) != side_of(seq)


def swaps_in(blocks: int) -> int:
    """Swaps in a sequence of ``blocks`` blocks (one before every visit that follows the other side)."""
    return sum(1 for seq in range(1, 2 * blocks) if follows_wake(seq))
