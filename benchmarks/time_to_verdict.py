"""Where the wall time of each committed GPU run went: starting, measuring, evaluating, swapping, idle.

    python benchmarks/time_to_verdict.py [RUN_DIR ...]   # default: every run directory under benchmarks/results

A run recorded with activity spans (server.json ``activity``) is read by ``byog.analysis.time_to_verdict``,
the formula summary.json carries. Older runs have only their starts (``ready_after_s``) and each bench
point's ``duration_s``; for them starting and measuring are those sums, the wall is the first start to the
last point's end, evaluating is unknown (eval records hold no wall time) and is folded into idle, marked "~".
``started_at`` is whole seconds, so a share within a second of 100 % can print above it.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.time_to_verdict import time_to_verdict
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.plans.load import parse_plan


def _unix(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


def _from_points(root: Path) -> tuple[float, float, float] | None:
    """(wall, starting, measuring) of a run without activity spans, from starts and point records."""
    t0s, ends, starting, measuring = [], [], 0.0, 0.0
    for record in root.glob("servers/**/server.json"):
        for start in read_json(record).get("starts") or []:
            if start.get("started_at") and start.get("ready_after_s") is not None:
                t0s.append(_unix(start["started_at"]))
                ends.append(t0s[-1] + float(start["ready_after_s"]))
                starting += float(start["ready_after_s"])
    for point in root.glob("bench/**/*.json"):
        doc = read_json(point)
        if doc.get("started_at") and doc.get("duration_s") is not None:
            ends.append(_unix(doc["started_at"]) + float(doc["duration_s"]))
            measuring += float(doc["duration_s"])
    if not t0s:
        return None
    return max(ends) - min(t0s), starting, measuring


def show(root: Path) -> None:
    plan = parse_plan((root / "plan.yaml").read_text(encoding="utf-8"), str(root / "plan.yaml"))
    rel = root.relative_to(REPO) if root.is_relative_to(REPO) else root
    records = [read_json(p) for p in root.glob("servers/**/server.json")]
    if any(r.get("activity") for r in records):
        t = time_to_verdict(RunDir(root), plan)
        if t is not None:
            r = t.run
            share = f"{r.measuring_share:.1%}" if r.measuring_share is not None else "-"
            print(
                f"{str(rel):<62} {r.wall_s:8.0f} {r.starting_s:8.0f} {r.measuring_s:9.0f} {r.evaluating_s:10.0f}"
                f" {r.swapping_s:8.0f} {r.idle_s:7.0f}  {share}"
            )
            return
    found = _from_points(root)
    if found is None:
        print(f"{str(rel):<62} (no start recorded: an endpoint or a record without starts)")
        return
    wall, starting, measuring = found
    idle = max(wall - starting - measuring, 0.0)
    share = f"{measuring / wall:.1%}" if wall > 0 else "-"
    print(f"{str(rel):<62} {wall:8.0f} {starting:8.0f} {measuring:9.0f} {'~':>10} {0:8.0f} {idle:6.0f}~  {share}")


def main() -> None:
    roots = [Path(a).resolve() for a in sys.argv[1:]] or sorted(
        p.parent for p in (REPO / "benchmarks/results").glob("**/plan.yaml")
    )
    print(
        f"{'run':<62} {'wall s':>8} {'starting':>8} {'measuring':>9} {'evaluating':>10}"
        f" {'swapping':>8} {'idle':>7}  share"
    )
    for root in roots:
        show(root)


if __name__ == "__main__":
    main()
