"""The simulation table of docs/statistics.md §6: how often a perf 95% CI covers the true ratio of
two identical servers, old CI (bootstrap) against new (launch t interval), by launches per side
and between-launch share. Fixed seeds; the model is byog.analysis.launch_coverage's.

    python benchmarks/launch_coverage.py [--waves W] [--trials N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.launch_coverage import coverage

SHARES = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--trials", type=int, default=4000, help="per cell for the t interval (the bootstrap: 1/4)")
    args = parser.parse_args()
    print(f"coverage of the 95% CI of candidate/baseline (true ratio 1), W = {args.waves} waves per launch")
    print("| R per side | CI | " + " | ".join(f"share {s:g}" for s in SHARES) + " |")
    print("|---|---|" + "---:|" * len(SHARES))
    rows: list[tuple[str, str, dict[str, object]]] = []
    for r in (1, 2, 3, 5):
        old = "old = new: wave bootstrap, labelled" if r == 1 else "old: hierarchical bootstrap"
        rows.append((str(r), old, {"method": "bootstrap"}))
        if r > 1:
            rows.append((str(r), "new: launch t interval", {"method": "t"}))
    rows.append(("1 + calibration (R = 3 A/A)", "new: launch t interval", {"method": "t", "calibration_launches": 3}))
    rows.append(("1 cand / 2 base (A/A pair)", "new: launch t interval", {"method": "t", "launches": (1, 2)}))
    for label, method, options in rows:
        launches = options.pop("launches", int(label.split()[0]))
        trials = args.trials // 4 if options["method"] == "bootstrap" else args.trials
        cells = [coverage(launches, args.waves, s, trials=trials, **options) for s in SHARES]  # type: ignore[arg-type]
        print(f"| {label} | {method} | " + " | ".join(f"{c:.1%}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
