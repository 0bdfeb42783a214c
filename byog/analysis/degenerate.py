"""Degenerate accuracy comparisons: cases the paired test would score but cannot judge, named
instead (docs/statistics.md). A verdict row with any of them reads "degenerate", never
"equivalent", and says which and why; ``verify --policy`` can refuse them.

- ``floor``: both servers score at most one margin (s_c <= M and s_b <= M). A server that
  answers nothing right would be inside the margin too, so "equivalent" proves nothing (and a
  broken harness on both sides reads the same). GSM8K at 0/100 on both servers is this case.
- ``ceiling``: both score at least 100 - M: the task cannot tell a weaker server apart.
- ``no_discordant``: every item scored the same on both servers and n is too small for that to
  count: the gate floors SE_d at one discordant item's worth, resolution / n, and
  t(0.95, n - 1) x resolution / n >= M, so no outcome at this n could be "equivalent"; on binary
  items (``method`` "tango-score") Tango's statistic with no discordant item is sqrt(n m / (1 - m)),
  m = M / 100, and it is too few items while that stays below z(0.95).
- ``below_reference``: the baseline scored below the plan's ``min_baseline_score`` for the task
  (the score the plan expects of this model, like vLLM CI's accuracy floors): the harness, the
  data or the weights are not what the plan assumed, so the comparison is not about the candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from byog.analysis.stats import ALPHA, z_quantile
from byog.schemas.evals import DegenerateReason, PairedMethod


@dataclass(frozen=True)
class Degenerate:
    reason: DegenerateReason
    why: str


def degenerate_cases(
    candidate_score: float | None,
    baseline_score: float | None,
    n: int,
    discordant: int,
    margin: float,
    resolution: float,
    t95: float | None,
    min_baseline_score: float | None = None,
    method: PairedMethod = "paired-t",
) -> list[Degenerate]:
    """Every degenerate case of one comparison, in a fixed order (scores and margin in points).

    ``discordant``: items whose per-item scores differ; ``t95``: t(0.95, n - 1) (None for n < 2).
    """
    found: list[Degenerate] = []
    if candidate_score is not None and baseline_score is not None:
        if candidate_score <= margin and baseline_score <= margin:
            found.append(
                Degenerate(
                    "floor",
                    f"both servers score within one margin ({margin:g}) of 0 "
                    f"({candidate_score:.1f} and {baseline_score:.1f}): a server that solves "
                    "nothing would pass as equivalent",
                )
            )
        if candidate_score >= 100 - margin and baseline_score >= 100 - margin:
            found.append(
                Degenerate(
                    "ceiling",
                    f"both servers score within one margin ({margin:g}) of 100 "
                    f"({candidate_score:.1f} and {baseline_score:.1f}): the task cannot "
                    "tell a weaker server apart",
                )
            )
    if n >= 2 and discordant == 0 and method == "tango-score" and margin < 100:
        m = margin / 100.0
        need = math.ceil(z_quantile(1 - ALPHA) ** 2 * (1 - m) / m)
        if n < need:
            found.append(
                Degenerate(
                    "no_discordant",
                    f"no item differs between the servers, and {n} identical right-or-wrong items cannot "
                    f"bound the difference inside the margin ({margin:g}): Tango's interval needs {need}",
                )
            )
    elif n >= 2 and discordant == 0 and t95 is not None and t95 * resolution / n >= margin:
        found.append(
            Degenerate(
                "no_discordant",
                f"no item differs between the servers, and at n = {n} one "
                f"discordant item's SE ({resolution / n:.2f}) already keeps the "
                f"90% CI wider than the margin ({margin:g})",
            )
        )
    if min_baseline_score is not None and baseline_score is not None and baseline_score < min_baseline_score:
        found.append(
            Degenerate(
                "below_reference",
                f"the baseline scores {baseline_score:.1f}, below the "
                f"{min_baseline_score:g} the plan expects of this model: the "
                "harness, data or weights are not what the plan assumed",
            )
        )
    return found
