"""The group-sequential gate on the flagship's sampled multi-pass evals, by Monte Carlo: its false
equivalence, its false difference and the items it saves at the designs the kimi-k3-gb300 profile runs
with looks (docs/statistics.md §1a). benchmarks/eval_sequential.py covers greedy single-pass items
(Tango's score statistic, n >= 610); a sampled task is judged by the paired t on per-item means of K
passes, at a few dozen items, which that table does not reach.

    python benchmarks/eval_sequential_passes.py [--trials N] [--looks 0.5 0.75 1.0]

Each trial draws n items p_i ~ Beta from the task registry's prior (``gate_power.prior_model``, as
``gate_power.simulate_rates`` does), then K Binomial passes of the baseline and of the candidate (the
same p_i, or one margin worse: ``gate_power.shifted``), and runs the gate byog runs
(``group_sequential.sequential_gate``, paired t) on the per-item differences, with the profile's looks
and with one look (the fixed gate). Fixed seeds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.gate_power import prior_model, shifted
from byog.analysis.group_sequential import SequentialDesign, sequential_gate
from byog.plans.tasks import TASKS

# (task, items, passes): the flagship's sampled evals at its standard and full tiers
DESIGNS = (("aime25", 30, 16), ("gpqa_diamond", 198, 10))


def _verdicts(
    task: str, n: int, passes: int, shift: float, design: SequentialDesign, trials: int, seed: int
) -> tuple[float, float, float]:
    """(P(equivalent), P(different), mean share of items seen) over ``trials`` comparisons."""
    model = prior_model(task)
    assert model is not None
    margin = TASKS[task].default_margin
    rng = np.random.default_rng(seed)
    a, b = model.accuracy * model.concentration, (1 - model.accuracy) * model.concentration
    resolution = 100.0 / passes
    equivalent = different = 0
    seen = 0
    for _ in range(trials):
        p = rng.beta(a, b, size=n)
        q = shifted(p, -shift / 100.0) if shift else p
        diffs = (rng.binomial(passes, q) - rng.binomial(passes, p)) * resolution
        looks = sequential_gate(diffs.tolist(), margin, design, resolution)
        equivalent += looks[-1].decision == "equivalent"
        different += looks[-1].decision == "different"
        seen += looks[-1].items
    return equivalent / trials, different / trials, seen / (trials * n)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="per cell")
    parser.add_argument("--looks", type=float, nargs="+", default=[0.5, 0.75, 1.0])
    args = parser.parse_args()
    sequential = SequentialDesign(fractions=tuple(args.looks))
    fixed = SequentialDesign(fractions=(1.0,))
    print(
        f"paired-t gate on per-item means of K sampled passes; looks at {', '.join(f'{t:g}' for t in args.looks)} "
        f"of n (OBF), alpha 0.05, {args.trials} trials per cell (seeded); items from the task registry's prior; "
        "false equivalence: the candidate one margin worse called equivalent; false difference: identical "
        "servers called different; fixed = one look at n"
    )
    print(
        "| task | n x K | margin | false equivalence: sequential | fixed | false difference: sequential | fixed | "
        "equivalent at delta 0: sequential | fixed | items seen, delta 0 | items seen, delta = margin |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for index, (task, n, passes) in enumerate(DESIGNS):
        margin = TASKS[task].default_margin
        seed = 4900 + 10 * index
        eq0, diff0, seen0 = _verdicts(task, n, passes, 0.0, sequential, args.trials, seed)
        eqm, _, seenm = _verdicts(task, n, passes, margin, sequential, args.trials, seed + 1)
        f_eq0, f_diff0, _ = _verdicts(task, n, passes, 0.0, fixed, args.trials, seed + 2)
        f_eqm, _, _ = _verdicts(task, n, passes, margin, fixed, args.trials, seed + 3)
        print(
            f"| {task} | {n} x {passes} | {margin:g} | {pct(eqm)} | {pct(f_eqm)} | {pct(diff0)} | {pct(f_diff0)} | "
            f"{pct(eq0)} | {pct(f_eq0)} | {pct(seen0)} | {pct(seenm)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
