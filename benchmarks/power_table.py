"""Predicted vs simulated false-fail rate and power of the accuracy gate, for every eval of every
built-in profile at every tier (docs/statistics.md).

The prediction is ``byog.analysis.gate_power.planned_power`` (what ``byog plan`` shows); the
simulation runs the gate itself (``paired_comparison``) on servers drawn from the same model
(``simulate_rates``), seeded, so the table re-prints the same. Designs shared by several
profile/tier rows are simulated once.

    python benchmarks/power_table.py                  # markdown table, 1000 trials per design
    python benchmarks/power_table.py --trials 300 --json
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

from byog.analysis.gate_power import ItemModel, planned_power, simulate_rates  # noqa: E402
from byog.plans.load import load_plan  # noqa: E402
from byog.plans.tasks import TASKS  # noqa: E402
from byog.plans.tiers import TIERS, apply_tier, eval_items  # noqa: E402

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
    args = parser.parse_args()
    rows = table(args.trials)
    print(json.dumps(rows, indent=1) if args.json else markdown(rows))


if __name__ == "__main__":
    main()
