"""Time to verdict: where a run's wall time went, from the servers' own records.

Each ``servers/<name>[/launch-<r>]/server.json`` holds its starts (``started_at``, ``ready_after_s``)
and the spans the pipeline recorded as each ended (``activity``: measure, eval, numerics, swap,
wake-check). Per server: starting = sum of its ready times; measuring, evaluating (evals and numerics passes),
swapping and checking (an interleaved server's wake-integrity fingerprints) = sums of those spans;
its span runs from its first start to its last recorded end, and idle = span - the rest. For the
run: wall = first start to last end over every server; each kind is the length of the union of that
kind's intervals (two servers do not start at once, but a union never counts a second twice); idle =
wall - the union of every busy interval. The measuring share is measuring / wall: what fraction of
the run produced the numbers it reports.

The records are checked before any of that is computed (``record_problems``): a span that ends
before it starts or lasts longer than ``MAX_SPAN_S``, a span before its server's first start, a
start-up or swap of negative or absurd length, a swap whose visit is outside its point, and a run
whose records spread over more than ``MAX_SPAN_S``, fail in one sentence (``CheckFailed``), so no
"-692003211.4% measuring share" reaches a report.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from pathlib import Path

from byog.analysis import wake
from byog.core.errors import CheckFailed
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.schemas.plan import Plan
from byog.schemas.server import ServerRecord
from byog.schemas.summary import ServerTime, TimeSpent, TimeToVerdict

Interval = tuple[float, float]
KINDS = {
    "measure": "measuring_s",
    "eval": "evaluating_s",
    "numerics": "evaluating_s",
    "swap": "swapping_s",
    "wake-check": "checking_s",
}
FIELDS = ("starting_s", *dict.fromkeys(KINDS.values()))  # TimeSpent's seconds by kind
MAX_SPAN_S = 7 * 24 * 3600.0  # a week: longer than any run byog makes; a record that says more is not a run's
START_SLACK_S = 1.0  # started_at has whole-second precision in some records


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
    out: dict[str, list[Interval]] = {field: [] for field in FIELDS}
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
        **{field: length(intervals[field]) for field in FIELDS},
        idle_s=max(wall - busy, 0.0),
        measuring_share=length(intervals["measuring_s"]) / wall if wall > 0 else None,
    )


def server_records(run_dir: RunDir, plan: Plan) -> list[tuple[str, int, ServerRecord]]:
    """Every server.json of the run, by server name in folder order and launch: up to the server's plan
    launches (``Plan.most_launches``), so a relaunch recorded before a server with evals only started
    once is still read."""
    found = []
    servers = run_dir.root / "servers"
    names = sorted(p.name for p in servers.iterdir() if p.is_dir()) if servers.is_dir() else []
    for name in names:
        for launch in range(1, max(plan.most_launches(name) if name in plan.servers else 1, 1) + 1):
            path: Path = run_dir.for_launch(launch).server_record(name)
            if path.is_file():
                found.append((name, launch, ServerRecord.model_validate(read_json(path))))
    return found


def _starts(where: str, record: ServerRecord) -> tuple[list[str], list[Interval]]:
    problems, found = [], []
    for start in record.starts:
        if not start.get("started_at") or start.get("ready_after_s") is None:
            continue
        try:
            t0, ready = _unix(str(start["started_at"])), float(start["ready_after_s"])
        except (ValueError, TypeError, OverflowError):
            problems.append(f"{where}: a start's started_at or ready_after_s is not a time")
            continue
        if not 0 <= ready <= MAX_SPAN_S:
            problems.append(f"{where}: a start-up took {ready:.1f} s, which no start-up takes")
        found.append((t0, t0 + ready))
    return problems, found


def _swap_seqs(plan: Plan) -> dict[str | None, int]:
    """Per point id, the visits a swap may precede (batch: 2 x waves; a whole point: 2 x its index + 2); None: evals."""
    points = expand_plan(plan)
    return {None: 0} | {
        p.point_id: 2 * max(p.wave_cap, 1) if p.kind == "batch" else 2 * i + 2 for i, p in enumerate(points)
    }


def _record_problems(where: str, record: ServerRecord, seqs: dict[str | None, int]) -> list[str]:
    problems, starts = _starts(where, record)
    first = min((t0 for t0, _ in starts), default=None)
    for span in record.activity:
        length = span.t1_unix_s - span.t0_unix_s
        if length < 0:
            problems.append(f"{where}: a {span.kind} span ends {-length:.1f} s before it starts")
        elif length > MAX_SPAN_S:
            problems.append(f"{where}: a {span.kind} span lasts {length / 86400:.0f} days")
        if first is not None and span.t0_unix_s < first - START_SLACK_S:
            problems.append(f"{where}: a {span.kind} span starts {first - span.t0_unix_s:.1f} s before the server did")
    if record.sleep_mode is not None:
        problems += wake.swap_problems(where, record.sleep_mode.swaps)
        problems += [f"{where}: {found}" for found in wake.verdict_mismatches(record.sleep_mode)]
    for swap in record.sleep_mode.swaps if record.sleep_mode is not None else []:
        if not (0 <= swap.sleep_s <= MAX_SPAN_S and 0 <= swap.wake_s <= MAX_SPAN_S):
            problems.append(f"{where}: a swap slept {swap.sleep_s} s and woke in {swap.wake_s} s, which no swap does")
        top = seqs.get(swap.point_id)
        if top is None or not (-1 if swap.point_id is None else 0) <= swap.seq < max(top, 0):
            problems.append(f"{where}: a swap before visit {swap.seq} of {swap.point_id or 'the evals'} is outside it")
    return problems


def record_problems(records: list[tuple[str, int, ServerRecord]], plan: Plan) -> list[str]:
    """Why the servers' time records cannot be a run's (see the module docstring); [] when they can."""
    seqs = _swap_seqs(plan)
    problems = []
    for name, launch, record in records:
        problems += _record_problems(f"server '{name}' (launch {launch})", record, seqs)
    every = [i for _, _, record in records for kind in _intervals_or_none(record) for i in kind]
    if every and max(t1 for _, t1 in every) - min(t0 for t0, _ in every) > MAX_SPAN_S:
        days = (max(t1 for _, t1 in every) - min(t0 for t0, _ in every)) / 86400
        problems.append(f"the servers' records spread over {days:.0f} days, more than any run")
    return problems


def _intervals_or_none(record: ServerRecord) -> list[list[Interval]]:
    try:
        return list(_intervals(record).values())
    except (ValueError, TypeError, OverflowError):
        return []


def check_records(run_dir: RunDir, plan: Plan) -> list[str]:
    """``record_problems`` of the run directory's server records."""
    return record_problems(server_records(run_dir, plan), plan)


def time_to_verdict(run_dir: RunDir, plan: Plan) -> TimeToVerdict | None:
    """Per server and launch, and for the run; None when no server recorded an activity span (runs
    made before byog recorded them, and ``bench --endpoint``, whose wall byog does not see whole).
    CheckFailed (the first of ``record_problems``) when the records cannot be a run's."""
    records = server_records(run_dir, plan)
    problems = record_problems(records, plan)
    if problems:
        raise CheckFailed(problems[0])
    if not any(record.activity for _, _, record in records):
        return None
    servers: list[ServerTime] = []
    merged: dict[str, list[Interval]] = {field: [] for field in FIELDS}
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
