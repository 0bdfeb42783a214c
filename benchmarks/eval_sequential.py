"""The group-sequential accuracy gate by Monte Carlo: false-equivalence and false-difference rates
across discordance rates 0.05-0.6, and the items it saves (docs/statistics.md §1a). Fixed seeds;
the model and the rates are byog.analysis.sequential_sim's. Beside the simulated items saved, the
figure ``byog plan`` computes (``group_sequential.expected_items``: the normal approximation of the
same boundaries, no simulation).

    python benchmarks/eval_sequential.py [--trials N] [--margin M] [--looks 0.5 0.75 1.0] [--method M]

``--method tango-score`` (the default) is the gate byog runs on binary items; ``--method paired-t``
is the paired t gate it used before, for the before/after comparison (docs/statistics.md §1).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.gate_power import prob_equivalent_exact
from byog.analysis.group_sequential import SequentialDesign, expected_items
from byog.analysis.sequential_sim import simulate
from byog.schemas.evals import PairedMethod

DISCORDANCE = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="per cell")
    parser.add_argument("--margin", type=float, default=3.0, help="points")
    parser.add_argument("--looks", type=float, nargs="+", default=[0.5, 0.75, 1.0])
    parser.add_argument("--method", choices=("tango-score", "paired-t"), default="tango-score")
    args = parser.parse_args()
    looks = tuple(args.looks)
    method: PairedMethod = args.method
    print(
        f"{method} gate; greedy single pass, margin {args.margin:g} points, looks at "
        f"{', '.join(f'{t:g}' for t in looks)} of n, alpha 0.05, {args.trials} trials per cell (seeded); "
        "n: one-look TOST power 90% at delta 0; fixed = the one-look gate at the same n; "
        "exact = the fixed gate's false equivalence summed over every trinomial outcome (no Monte Carlo error)"
    )
    print(
        "| spending | discordance | n | false equivalence (delta = margin): sequential | fixed | fixed, exact | "
        "difference level (delta 0): sequential | fixed | false difference (delta 0): sequential | fixed | "
        "equivalent at delta 0: sequential | fixed | items saved, delta 0 | computed (byog plan) | "
        "items saved, delta = margin | computed (byog plan) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spending in ("obf", "pocock"):
        for index, q in enumerate(DISCORDANCE):
            cell = simulate(q, args.margin, looks, args.trials, seed=1000 + index, spending=spending, method=method)
            shift = args.margin / 100.0  # delta = margin: P(+100) = (q + shift) / 2, P(-100) = (q - shift) / 2
            exact = prob_equivalent_exact(100.0, (q - shift) / 2, (q + shift) / 2, cell.n, args.margin, 100.0, method)
            design = SequentialDesign(fractions=looks, spending=spending)
            sd_equal, sd_apart = 100.0 * math.sqrt(q), math.sqrt(1e4 * q - args.margin**2)
            equal = 1.0 - expected_items(cell.n, design, args.margin, 0.0, sd_equal) / cell.n
            apart = 1.0 - expected_items(cell.n, design, args.margin, args.margin, sd_apart) / cell.n
            print(
                f"| {spending} | {q:g} | {cell.n} | {pct(cell.false_equivalence)} | "
                f"{pct(cell.fixed_false_equivalence)} | {pct(exact)} | {pct(cell.difference_level)} | "
                f"{pct(cell.fixed_difference_level)} | {pct(cell.false_difference)} | "
                f"{pct(cell.fixed_false_difference)} | {pct(cell.power)} | {pct(cell.fixed_power)} | "
                f"{pct(cell.items_saved_equal)} | {pct(equal)} | {pct(cell.items_saved_margin)} | {pct(apart)} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
