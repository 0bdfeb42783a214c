"""``stopping``: every batch point that stopped on its CI stopped where its recorded waves say.

A point with a CI target (``byog.analysis.wave_stopping``, docs/statistics.md §8) records the rule,
the half-width after each wave and why it stopped. This check recomputes the half-widths from the
point's rows, the rule from the plan, and the decision from both, and refuses a record whose rule,
half-widths or decision says otherwise: one sentence naming the point and what its waves say.
"""

from __future__ import annotations

from byog.analysis.request_columns import read_request_columns
from byog.analysis.summary import plan_of
from byog.analysis.validity import load_point_record
from byog.analysis.wave_stopping import recorded_problem
from byog.bundles.checks.base import Found, VerifyContext, check, counted
from byog.plans.expand import expand_plan


@check("stopping", requires=("schemas",))
def stopping_recomputes(ctx: VerifyContext) -> Found:
    planned = {p.point_id: p for p in expand_plan(plan_of(ctx.run_dir))}
    failures: list[str] = []
    stopped = 0
    bench = ctx.root / "bench"
    for path in sorted(bench.rglob("*.json")) if bench.is_dir() else []:
        record = load_point_record(path)
        rows_path = path.with_suffix(".parquet")
        rows = read_request_columns(rows_path) if rows_path.is_file() else None
        name = path.relative_to(ctx.root).as_posix()
        problem = recorded_problem(record, rows, planned.get(record.point.point_id))
        if problem is not None:
            failures.append(f"{name}: {problem}")
        elif record.stopping is not None:
            stopped += 1
    if failures:
        return Found(
            counted(failures, "points stopped other than their waves say"), failed=True, details={"failed": failures}
        )
    if not stopped:
        return Found("no point stopped on its CI (fixed waves)")
    return Found(f"{stopped} point(s) stopped where their recorded waves and the plan's rule say")
