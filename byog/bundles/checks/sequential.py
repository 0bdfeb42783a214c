"""Sequential: an eval whose plan sets ``looks`` was decided by its group-sequential design, at the
looks the plan fixed, and the decision the bundle states is the one its per-item records give.

The gate is recomputed from items.parquet and plan.yaml (``byog.analysis.eval_summary``): a verdict
whose shipped decision, stopping look or looks differ (an edited decision, a look the plan did not
plan, a design the plan did not name) fails here with the eval named, before the whole-summary
comparison of the summary check. The runner may stop before the plan's limit only where the gate
stopped: records that end before a look the gate needed (items dropped past a look that said
continue) are refused; items recorded past the stopping look are fine, and the decision stays the
first look that crossed a boundary.
"""

from __future__ import annotations

from typing import Any

from byog.analysis import group_sequential
from byog.bundles.checks.base import Skipped, VerifyContext, check, counted
from byog.bundles.checks.recompute import shipped_verdict_rows, stated_summary, verdict_key
from byog.core.errors import CheckFailed
from byog.core.safe_text import one_line
from byog.schemas.evals import EvalVerdict, SequentialRecord


def _said(record: SequentialRecord | None) -> str:
    if record is None:
        return "no sequential design"
    return f"{record.decision} at {record.items_used} of {record.items_planned} items"


def _shipped_said(record: Any) -> str:
    if not isinstance(record, dict):
        return "no sequential design"
    used, planned = (one_line(str(record.get(k)), 20) for k in ("items_used", "items_planned"))
    return f"{one_line(str(record.get('decision')), 20)} at {used} of {planned} items"


def _looks(record: Any) -> list[tuple[Any, Any]]:
    looks = record.get("looks") if isinstance(record, dict) else None
    return [(lk.get("items"), lk.get("decision")) for lk in looks or [] if isinstance(lk, dict)]


def _dropped(verdict: EvalVerdict, record: SequentialRecord) -> str:
    """Items past a look that did not stop are missing: the run may only end early where the gate stopped."""
    sizes = group_sequential.look_sizes(record.items_planned, record.fractions)
    k = len(record.looks)
    name = one_line(f"{verdict.task} {verdict.candidate} vs {verdict.baseline}", 120)
    said = f"look {k} at {record.looks[-1].items} items said continue" if k else "no look was taken"
    return (
        f"{name}: the per-item records pair fewer than the {sizes[k]} items of look {k + 1} of the plan, "
        f"and {said}: items were dropped without the group-sequential gate stopping"
    )


@check("sequential", requires=("schemas",))
def sequential_decisions_recompute(ctx: VerifyContext) -> str:
    rows = shipped_verdict_rows(ctx)
    derived = {(v.task, v.candidate, v.baseline): v for v in stated_summary(ctx).evals.verdicts}
    planned = [v for v in derived.values() if v.sequential is not None]
    stated = [r for r in rows if r.get("sequential") is not None]
    if not planned and not stated:
        raise Skipped("no eval plans looks")
    failures = [
        _dropped(v, v.sequential) for v in planned if v.sequential and group_sequential.missing_items(v.sequential)
    ]
    for row in rows:
        key = verdict_key(row)
        if key not in derived:
            continue
        mine = derived[key].sequential
        theirs = row.get("sequential")
        recomputed = [(lk.items, lk.decision) for lk in mine.looks] if mine else []
        if (
            (mine is None) != (theirs is None)
            or recomputed != _looks(theirs)
            or (mine is not None and row.get("verdict") != derived[key].verdict)
        ):
            name = one_line(f"{key[0]} {key[1]} vs {key[2]}", 120)
            failures.append(
                f"{name}: the bundle states {_shipped_said(theirs)} (verdict {one_line(str(row.get('verdict')), 20)}); "
                f"its per-item records and plan give {_said(mine)} (verdict {derived[key].verdict})"
            )
    if failures:
        raise CheckFailed(counted(failures, "sequential decisions differ from the records"))
    return f"{len(planned)} group-sequential decision(s) recompute from the per-item records at the planned looks"
