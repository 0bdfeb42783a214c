"""Where a run's time went, from its phase record (phases.json, ``byog.schemas.phases``).

wall = the first phase's start to the last phase's end (Unix time: a run resumed later holds the
pause, as "other"); per kind, the length of the union of its phases (monotonic lengths, placed at
their Unix start); measuring = the measure phases less the warm-up waves inside them; checking =
an interleaved server's wake-integrity fingerprints; evaluating = the eval and numerics phases;
other = wall - everything recorded (prompt building, snapshots, stops, a resumed run's pause).
The measuring share = measuring / wall.

``phase_problems`` says why a record cannot be a run's, each in one sentence: a phase that ends
before it starts or outlasts any run, monotonic and Unix lengths that disagree, phases not in the
order they ended, a warm-up outside every measure of its server, two phases (other than a warm-up
in its measure, or the eval phases of two servers the run recorded as evaluated at once) that overlap.
``eval_order_problems`` holds each such record to the plan: only servers on GPUs of their own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from byog.analysis.gpu_sets import at_once, shared_cards
from byog.analysis.time_to_verdict import union_length
from byog.core.errors import CheckFailed
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.schemas.migrate import migrate
from byog.schemas.phases import Phase, PhaseLog
from byog.schemas.plan import Plan
from byog.schemas.summary import PhaseTime

MAX_SPAN_S = 7 * 24 * 3600.0  # a week: longer than any run byog makes
SLACK_S = 1.0  # Unix times are kept to the millisecond; a clock may be slewed a little while a phase runs
CLOCK_DRIFT = 0.01  # monotonic and Unix lengths of one phase agree within 1% (+ SLACK_S)
KIND_FIELDS = {
    "start": "start_s",
    "warm-up": "warmup_s",
    "measure": "measuring_s",
    "swap": "swap_s",
    "wake-check": "check_s",
    "eval": "eval_s",
    "numerics": "eval_s",
}


def read_phases(rd: RunDir) -> PhaseLog | None:
    """The run's phase record; None for a run made before byog recorded phases."""
    if not rd.phases_json.is_file():
        return None
    try:
        return PhaseLog.model_validate(migrate("phases", read_json(rd.phases_json), label="phases.json"))
    except ValueError as err:
        raise CheckFailed(f"phases.json is not a phase record: {str(err).splitlines()[0]}") from None


def _where(p: Phase, i: int) -> str:
    launch = f", launch {p.launch}" if p.launch > 1 else ""
    return f"phase {i + 1} ({p.kind} of {p.server}{launch})"


def _interval(p: Phase) -> tuple[float, float]:
    return p.t0_unix_s, p.t0_unix_s + (p.t1_mono_s - p.t0_mono_s)


def phase_problems(log: PhaseLog) -> list[str]:
    """Why the record cannot be a run's (see the module docstring); [] when it can."""
    problems: list[str] = []
    phases = log.phases
    for i, p in enumerate(phases):
        mono, unix = p.t1_mono_s - p.t0_mono_s, p.t1_unix_s - p.t0_unix_s
        if mono < 0 or unix < -SLACK_S:
            problems.append(f"{_where(p, i)} ends {-min(mono, unix):.1f} s before it starts")
        elif mono > MAX_SPAN_S:
            problems.append(f"{_where(p, i)} lasts {mono / 86400:.0f} days, longer than any run")
        elif abs(mono - unix) > SLACK_S + CLOCK_DRIFT * mono:
            problems.append(f"{_where(p, i)} lasts {mono:.1f} s by the monotonic clock but {unix:.1f} s by Unix time")
        if i and p.t1_unix_s < phases[i - 1].t1_unix_s - SLACK_S:
            problems.append(f"{_where(p, i)} ended before the phase recorded ahead of it: the record is out of order")
    measures = [p for p in phases if p.kind == "measure"]
    for i, p in enumerate(phases):
        if p.kind == "warm-up" and not any(
            m.server == p.server
            and m.launch == p.launch
            and m.t0_unix_s - SLACK_S <= p.t0_unix_s
            and p.t1_unix_s <= m.t1_unix_s + SLACK_S
            for m in measures
        ):
            problems.append(f"{_where(p, i)} lies outside every measure phase of its server")
    top = sorted((p.t0_unix_s, p.t1_unix_s, i) for i, p in enumerate(phases) if p.kind != "warm-up")
    running: list[tuple[float, int]] = []  # (end, index) of the phases not yet over
    for start, end, j in top:
        running = [(e, i) for e, i in running if start < e - SLACK_S]
        for e, i in running:
            if not evals_at_once(log, phases[i], phases[j]):
                problems.append(f"{_where(phases[j], j)} starts {e - start:.1f} s before {_where(phases[i], i)} ends")
        running.append((end, j))
    return problems


def evals_at_once(log: PhaseLog, p: Phase, q: Phase) -> bool:
    """Two eval phases of servers the run recorded as evaluated at once (``eval_order``): they may overlap."""
    return (
        p.kind == q.kind == "eval"
        and p.server != q.server
        and p.launch == q.launch
        and any(o.together and o.launch == p.launch and {p.server, q.server} <= set(o.servers) for o in log.eval_order)
    )


def eval_order_problems(
    log: PhaseLog, plan: Plan, gpu: dict[str, Any] | None, seen: Mapping[str, Collection[str]]
) -> list[str]:
    """Each pair the record says was evaluated at once must be one the plan's GPU sets allow on the
    host its env.json describes (``byog.analysis.gpu_sets.at_once``), whose servers saw no GPU in
    common at their starts (``seen``: each server's cards by UUID): a record cannot make a pair of
    servers on shared or unknown GPUs legal to overlap."""
    problems: list[str] = []
    for o in log.eval_order:
        if not o.together:
            continue
        unknown = [s for s in o.servers if s not in plan.servers]
        if unknown or len(o.servers) != 2:
            problems.append(f"eval_order names servers {o.servers}, not a pair of the plan's servers")
            continue
        choice = at_once(plan, o.servers[0], o.servers[1], gpu)
        why = shared_cards(seen, o.servers[0], o.servers[1]) if choice.together else choice.why
        if why is not None:
            problems.append(f"eval_order says {' and '.join(o.servers)} were evaluated at once, but {why}")
    return problems


def phase_time(rd: RunDir) -> PhaseTime | None:
    """The run's wall time by phase; None without a record (older runs) or phases. CheckFailed (the first
    of ``phase_problems``) when the record cannot be a run's."""
    log = read_phases(rd)
    if log is None or not log.phases:
        return None
    problems = phase_problems(log)
    if problems:
        raise CheckFailed(f"phases.json: {problems[0]}")
    by_field: dict[str, list[tuple[float, float]]] = {f: [] for f in set(KIND_FIELDS.values())}
    for p in log.phases:
        by_field[KIND_FIELDS[p.kind]].append(_interval(p))
    every = [i for kind in by_field.values() for i in kind]
    wall = max(t1 for _, t1 in every) - min(t0 for t0, _ in every)
    seconds = {f: union_length(found) for f, found in by_field.items()}
    seconds["measuring_s"] = max(seconds["measuring_s"] - seconds["warmup_s"], 0.0)
    return PhaseTime(
        wall_s=wall,
        **seconds,
        other_s=max(wall - union_length(every), 0.0),
        measuring_share=seconds["measuring_s"] / wall if wall > 0 else None,
    )


def shares_line(spent: PhaseTime, *, bench: bool = True) -> str:
    """'measuring 27.8% of 195.6 s; start 40.0%, eval 20.1%, warm-up 3.0%, swap 0.0%, other 9.1%', largest
    first. A run that measured no bench point (``bench`` False) leads with that, not with a measuring share
    of 0.0% that reads as time wasted: 'no bench; of 214.0 s: start 65.0%, eval 34.1%'."""
    if spent.wall_s <= 0:
        return "no phase took any time"
    parts = {
        "start": spent.start_s,
        "warm-up": spent.warmup_s,
        "swap": spent.swap_s,
        "wake check": spent.check_s,
        "eval": spent.eval_s,
        "other": spent.other_s,
    }
    rest = ", ".join(
        f"{name} {100 * s / spent.wall_s:.1f}%" for name, s in sorted(parts.items(), key=lambda kv: -kv[1]) if s > 0
    )
    if not bench:
        return f"no bench; of {spent.wall_s:.1f} s" + (f": {rest}" if rest else "")
    return f"measuring {100 * spent.measuring_s / spent.wall_s:.1f}% of {spent.wall_s:.1f} s" + (
        f"; {rest}" if rest else ""
    )
