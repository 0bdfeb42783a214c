"""The operating-point answer "accuracy depends on the batch" by Monte Carlo (docs/statistics.md §1b):
how often it says yes / no / undetermined when the candidate-minus-baseline difference is the same at
both points, one margin apart, and two margins apart. Right-or-wrong items, one pass, the strata of
``byog.analysis.strata`` (each item's point from its identity) and its real ``strata_record``.

    python benchmarks/eval_strata.py [--trials N] [--items N] [--margin M]

Each item's paired difference d_i is +100 / 0 / -100 with P(d_i != 0) = q (the discordance) and mean
delta(B) points: 0 at B = 1, and 0, -margin or -2 margin at B = 64 (where q allows it: |delta| <= 100 q).
"false no" is the row with the difference one margin apart (the contrast's TOST bounds it at 5%); "false
yes" the row at 0 (the difference test's level bounds it at 5%).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.strata import operating_point, strata_record

DISCORDANCE = (0.05, 0.2, 0.4)
POINTS = [1, 64]


def trial(rng: random.Random, at: list[int], q: float, shift: float) -> tuple[list[float], list[float]]:
    """(candidate, baseline) scores: d_i = +100 with P (q + s) / 2, -100 with P (q - s) / 2 (s = shift / 100)."""
    cand, base = [], []
    for point in at:
        s = shift / 100.0 if point == 64 else 0.0
        u, b = rng.random(), 100.0 * (rng.random() < 0.5)
        if u < (q + s) / 2:
            cand.append(100.0)
            base.append(0.0)
        elif u < q:
            cand.append(0.0)
            base.append(100.0)
        else:
            cand.append(b)
            base.append(b)
    return cand, base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400, help="per cell")
    parser.add_argument("--items", type=int, default=1000, help="the eval's items (both strata)")
    parser.add_argument("--margin", type=float, default=5.0, help="points")
    args = parser.parse_args()
    keys = [(f"item:{i}", f"sha:{i}") for i in range(args.items)]
    at = [operating_point(i, s, POINTS) for i, s in keys]
    print(
        f"operating points {POINTS}: {at.count(1)} / {at.count(64)} of {args.items} items; margin {args.margin:g} "
        f"points; right-or-wrong items, one pass; {args.trials} seeded trials per cell; "
        "delta(64) - delta(1) = the true dependence on the point"
    )
    print("| discordance | true dependence (points) | yes | no | undetermined |")
    print("|---:|---:|---:|---:|---:|")
    for index, q in enumerate(DISCORDANCE):
        for k, dependence in enumerate((0.0, -args.margin, -2 * args.margin)):
            if abs(dependence) / 100.0 > q:
                print(
                    f"| {q:g} | {dependence:g} | n/a: a mean of {dependence:g} points needs discordance >= "
                    f"{abs(dependence) / 100:g} | | |"
                )
                continue
            rng = random.Random(1000 * index + k)
            said = {"yes": 0, "no": 0, "undetermined": 0}
            for _ in range(args.trials):
                cand, base = trial(rng, at, q, dependence)
                said[strata_record(keys, cand, base, POINTS, args.margin, 100.0).depends] += 1
            share = {key: f"{100 * n / args.trials:.1f}%" for key, n in said.items()}
            print(f"| {q:g} | {dependence:g} | {share['yes']} | {share['no']} | {share['undetermined']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
