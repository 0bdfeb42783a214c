"""Between-run noise, from reproductions: how far a re-run lands from the original beyond what
both runs' bootstrap CIs explain. Prints, per metric, every value check's deviation |ln(x_r/x_o)|,
the CI part sqrt(w_o^2 + w_r^2), and the excess (deviation - CI part, floored at 0): the delta
``byog reproduce --run-noise`` must cover (docs/reproduce.md, "Measured").

    python benchmarks/reproduce_noise.py runs/reproduce-*/reproduction.json

Run the reproductions with ``--run-noise 0`` so nothing is hidden. On a GPU host: make a bundle
with ``byog run PLAN``, then ``byog reproduce BUNDLE --points <every point> --eval-items 0
--run-noise 0`` (fresh servers each time) a few times, and pass every reproduction.json here.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def _half(low: float | None, high: float | None) -> float:
    return (math.log(high) - math.log(low)) / 2 if low and high and low > 0 and high > 0 else 0.0


def main(paths: list[str]) -> int:
    rows: dict[str, list[tuple[str, float, float]]] = {}
    for path in paths:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        for point in record["points"]:
            for c in point["checks"]:
                if (
                    c["kind"] != "value"
                    or c["deviation"] is None
                    or c["note"].startswith(("the original's point", "the reproduction's point"))
                ):
                    continue
                ci = math.hypot(
                    _half(c["original_low"], c["original_high"]), _half(c["reproduced_low"], c["reproduced_high"])
                )
                rows.setdefault(c["metric"], []).append((f"{c['server']} {c['point_id']}", abs(c["deviation"]), ci))
    if not rows:
        print("no compared value checks in these records")
        return 1
    for metric, checks in rows.items():
        print(f"\n{metric}: {len(checks)} value checks")
        print(f"  {'server point':40s} {'|dev|':>8s} {'CI part':>8s} {'excess':>8s}")
        for name, dev, ci in sorted(checks):
            print(f"  {name:40s} {math.expm1(dev):8.1%} {math.expm1(ci):8.1%} {math.expm1(max(0.0, dev - ci)):8.1%}")
        excess = sorted(max(0.0, dev - ci) for _, dev, ci in checks)
        print(f"  largest excess over the CI part: {math.expm1(excess[-1]):.1%} (the delta that covers every check)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
