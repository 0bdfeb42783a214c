"""Predicted vs simulated false-fail rate and power of the accuracy gate, for every eval of every
built-in profile at every tier (docs/statistics.md).

The prediction is ``byog.analysis.gate_power.planned_power`` (what ``byog plan`` shows); the
simulation runs the gate itself (``paired_comparison``) on servers drawn from the same model
(``simulate_rates``), seeded, so the table re-prints the same. Designs shared by several
profile/tier rows are simulated once.

    python benchmarks/power_table.py                  # markdown table, 1000 trials per design
    python benchmarks/power_table.py --trials 300 --json
    python benchmarks/power_table.py --redraw         # the greedy standard designs at re-draw 0.1-1.0

``--redraw``: the standard tier's greedy designs (GSM8K at its standard n x 1 at margin 3, MRCR 200 x 1 at margin
5, the registry's priors) at re-draw rates 0.1, 0.3, 0.6 and 1.0 (1.0: the two servers answer
independently), predicted and simulated: how the gate's false-fail rate grows with the rate a run
observes (docs/statistics.md, "Observed discordance").
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.gate_power import ItemModel, planned_power, simulate_rates
from byog.plans.load import load_plan
from byog.plans.tasks import TASKS
from byog.plans.tiers import TIERS, apply_tier, eval_items

PROFILES = sorted(p.stem for p in (REPO / "byog" / "plans" / "profiles").glob("*.yaml"))


def designs() -> list[dict[str, Any]]:
    """One row per (profile, tier, eval): the design the gate will see."""
    rows = []
    for profile in PROFILES:
        plan, _ = load_plan(profile)
        for tier in TIERS:
            for spec in apply_tier(plan, tier).evals:
                task = TASKS[spec.task]
                rows.append(
                    {
                        "profile": profile,
                        "tier": tier,
                        "task": spec.task,
                        "n": eval_items(spec),
                        "passes": spec.passes,
                        "sampled": task.sampled,
                        "margin": spec.margin if spec.margin is not None else task.default_margin,
                        "prior": task.sim_profile,
                    }
                )
    return rows


def table(trials: int) -> list[dict[str, Any]]:
    cache: dict[tuple[Any, ...], dict[str, Any]] = {}
    out = []
    for row in designs():
        key = (row["n"], row["passes"], row["sampled"], row["margin"], row["prior"])
        if key not in cache:
            model = ItemModel(*row["prior"])
            predicted = planned_power(model, row["n"], row["passes"], row["sampled"], row["margin"])
            simulated = simulate_rates(model, row["n"], row["passes"], row["sampled"], row["margin"], trials, seed=2026)
            cache[key] = {
                "ff_pred": predicted.false_fail,
                "ff_sim": simulated.false_fail,
                "power_pred": predicted.power,
                "power_sim": simulated.power,
                "method": predicted.method,
                "sound": predicted.sound,
                "trials": trials,
            }
        out.append({**row, **cache[key]})
    return out


REDRAWS = (0.1, 0.3, 0.6, 1.0)
GREEDY_STANDARD = (("gsm8k", TASKS["gsm8k"].standard_items or 1319, 3.0), ("mrcr", 200, 5.0))


def redraw_table(trials: int) -> list[dict[str, Any]]:
    """False-fail and power of the standard greedy designs at each re-draw rate."""
    rows = []
    for task, n, margin in GREEDY_STANDARD:
        mu, k = TASKS[task].sim_profile
        for redraw in REDRAWS:
            model = ItemModel(mu, k, redraw)
            predicted = planned_power(model, n, 1, False, margin)
            simulated = simulate_rates(model, n, 1, False, margin, trials, seed=2026)
            rows.append(
                {
                    "task": task,
                    "n": n,
                    "margin": margin,
                    "accuracy": mu,
                    "redraw": redraw,
                    "ff_pred": predicted.false_fail,
                    "ff_sim": simulated.false_fail,
                    "power_pred": predicted.power,
                    "power_sim": simulated.power,
                    "sound": predicted.sound,
                    "trials": trials,
                }
            )
    return rows


def redraw_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| task | n x K | margin | accuracy | re-draw | false-fail pred | sim | power pred | sim | gate |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['n']} x 1 | {r['margin']:g} | {r['accuracy']:.0%} | {r['redraw']:.1f} | "
            f"{r['ff_pred']:.1%} | {r['ff_sim']:.1%} | {r['power_pred']:.1%} | {r['power_sim']:.1%} | "
            f"{'sound' if r['sound'] else 'screening'} |"
        )
    lines += ["", f"{rows[0]['trials'] if rows else 0} simulated trials per row (the gate itself, seeded)"]
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]]) -> str:
    trials = rows[0]["trials"] if rows else 0
    lines = [
        "| profile | tier | task | n | K | decoding | margin | false-fail pred | sim | power pred | sim | gate |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['profile']} | {r['tier']} | {r['task']} | {r['n']} | {r['passes']} | "
            f"{'sampled' if r['sampled'] else 'greedy'} | {r['margin']:g} | {r['ff_pred']:.3f} | {r['ff_sim']:.3f} | "
            f"{r['power_pred']:.3f} | {r['power_sim']:.3f} | {'sound' if r['sound'] else 'screening'} |"
        )
    worst = max((abs(r["ff_pred"] - r["ff_sim"]) for r in rows), default=0.0)
    worst_p = max((abs(r["power_pred"] - r["power_sim"]) for r in rows), default=0.0)
    se = 0.5 / math.sqrt(trials) if trials else 0.0
    lines.append("")
    lines.append(
        f"{trials} simulated trials per design (binomial SE at most {se:.3f}); largest |predicted - simulated|: "
        f"false-fail {worst:.3f}, power {worst_p:.3f}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--redraw", action="store_true", help="the greedy standard designs at re-draw 0.1-1.0")
    args = parser.parse_args()
    if args.redraw:
        rows = redraw_table(args.trials)
        print(json.dumps(rows, indent=1) if args.json else redraw_markdown(rows))
        return
    rows = table(args.trials)
    print(json.dumps(rows, indent=1) if args.json else markdown(rows))


if __name__ == "__main__":
    main()
