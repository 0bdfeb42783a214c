"""Time to verdict: where a run's wall time went, from the servers' own records.

Each ``servers/<name>[/launch-<r>]/server.json`` holds its starts (``started_at``, ``ready_after_s``)
and the spans the pipeline recorded as each ended (``activity``: measure, eval, numerics, swap).
Per server: starting = sum of its ready times; measuring, evaluating (evals and numerics passes)
and swapping = sums of those spans; its span runs from its first start to its last recorded end,
and idle = span - the rest. For the run: wall = first start to last end over every server; each
kind is the length of the union of that kind's intervals (two servers do not start at once, but a
union never counts a second twice); idle = wall - the union of every busy interval. The
measuring share is measuring / wall: what fraction of the run produced the numbers it reports.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from pathlib import Path

from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.schemas.plan import Plan
from byog.schemas.server import ServerRecord
from byog.schemas.summary import ServerTime, TimeSpent, TimeToVerdict

Interval = tuple[float, float]
KINDS = {"measure": "measuring_s", "eval": "evaluating_s", "numerics": "evaluating_s", "swap": "swapping_s"}


def _unix(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso).timestamp()


def union_length(intervals: Iterable[Interval]) -> float:
    """Seconds covered by the union of the intervals."""
    total, end = 0.0, float("-inf")
    for t0, t1 in sorted(intervals):
        if t1 <= end:
            continue
        total += t1 - max(t0, end)
        end = t1
    return total


def _intervals(record: ServerRecord) -> dict[str, list[Interval]]:
    """Per field of ``TimeSpent``: the server's intervals of that kind (starts from ``starts``)."""
    out: dict[str, list[Interval]] = {"starting_s": [], "measuring_s": [], "evaluating_s": [], "swapping_s": []}
    for start in record.starts:
        if start.get("started_at") and start.get("ready_after_s") is not None:
            t0 = _unix(str(start["started_at"]))
            out["starting_s"].append((t0, t0 + float(start["ready_after_s"])))
    for span in record.activity:
        out[KINDS[span.kind]].append((span.t0_unix_s, span.t1_unix_s))
    return out


def _spent(intervals: dict[str, list[Interval]], union: bool) -> TimeSpent | None:
    every = [i for kind in intervals.values() for i in kind]
    if not every:
        return None
    wall = max(t1 for _, t1 in every) - min(t0 for t0, _ in every)

    def length(kind: list[Interval]) -> float:
        return union_length(kind) if union else sum(t1 - t0 for t0, t1 in kind)

    busy = union_length(every)
    return TimeSpent(
        wall_s=wall,
        starting_s=length(intervals["starting_s"]),
        measuring_s=length(intervals["measuring_s"]),
        evaluating_s=length(intervals["evaluating_s"]),
        swapping_s=length(intervals["swapping_s"]),
        idle_s=max(wall - busy, 0.0),
        measuring_share=length(intervals["measuring_s"]) / wall if wall > 0 else None,
    )


def _records(run_dir: RunDir, plan: Plan) -> list[tuple[str, int, ServerRecord]]:
    """Every server.json of the run, by server name in folder order and launch."""
    found = []
    servers = run_dir.root / "servers"
    names = sorted(p.name for p in servers.iterdir() if p.is_dir()) if servers.is_dir() else []
    for name in names:
        for launch in range(1, max(plan.launches_of(name) if name in plan.servers else 1, 1) + 1):
            path: Path = run_dir.for_launch(launch).server_record(name)
            if path.is_file():
                found.append((name, launch, ServerRecord.model_validate(read_json(path))))
    return found


def time_to_verdict(run_dir: RunDir, plan: Plan) -> TimeToVerdict | None:
    """Per server and launch, and for the run; None when no server recorded an activity span (runs
    made before byog recorded them, and ``bench --endpoint``, whose wall byog does not see whole)."""
    records = _records(run_dir, plan)
    if not any(record.activity for _, _, record in records):
        return None
    servers: list[ServerTime] = []
    merged: dict[str, list[Interval]] = {"starting_s": [], "measuring_s": [], "evaluating_s": [], "swapping_s": []}
    for name, launch, record in records:
        intervals = _intervals(record)
        spent = _spent(intervals, union=False)
        if spent is None:
            continue
        servers.append(ServerTime(server=name, launch=launch, **spent.model_dump()))
        for kind, found in intervals.items():
            merged[kind] += found
    run = _spent(merged, union=True)
    return TimeToVerdict(run=run, servers=servers) if run is not None else None
