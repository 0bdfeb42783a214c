"""Sequential: an eval whose plan sets ``looks`` was decided by its group-sequential design, at the
looks the plan fixed, and the decision the bundle states is the one its per-item records give.

The gate is recomputed from items.parquet and plan.yaml (``byog.analysis.eval_summary``): a verdict
whose shipped decision, stopping look or looks differ (an edited decision, a look the plan did not
plan, a design the plan did not name) fails here with the eval named, before the whole-summary
comparison of the summary check. The runner may stop before the plan's limit only where the gate
stopped: records that end before a look the gate needed (items dropped past a look that said
continue) are refused; items recorded past the stopping look are fine, and the decision stays the
first look that crossed a boundary.

A server whose results.json says it stopped at look k (``extra.sequential``: the later server of a
pair, or either of two evaluated at once in the same looks) must hold exactly look k's items, and k
must be the first look where the gate, recomputed on each of its pairs' records, had stopped for
every pair: two servers of a pair at once that stopped at different looks, or one that stopped where
the gate on its records does not stop, are refused.
"""

from __future__ import annotations

from typing import Any

from byog.analysis import group_sequential
from byog.analysis.eval_summary import item_scores
from byog.bundles.checks.base import Found, Skipped, VerifyContext, check, counted
from byog.bundles.checks.recompute import shipped_verdict_rows, stated_summary, verdict_key
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


def _stated_stops(ctx: VerifyContext, derived: dict[tuple[str, str, str], EvalVerdict]) -> tuple[int, list[str]]:
    """(servers that say they stopped at a look, the failures among them): see the module docstring."""
    stated, failures = 0, []
    rd = ctx.run_dir
    for server in rd.eval_servers():
        for task in rd.eval_tasks(server):
            results = ctx.parsed.get(f"evals/{server}/{task}/results.json")
            extra = results.get("extra") if isinstance(results, dict) else None
            record = extra.get("sequential") if isinstance(extra, dict) else None
            if not isinstance(record, dict) or record.get("stopped") is not True:
                continue
            stated += 1
            name, k = one_line(f"{task} on {server}", 120), record.get("looks_run")
            pairs = [v.sequential for v in derived.values() if v.task == task and server in (v.candidate, v.baseline)]
            planned = [p for p in pairs if p is not None]
            if not planned or len(planned) < len(pairs) or not isinstance(k, int) or isinstance(k, bool):
                failures.append(
                    f"{name}: its results say it stopped at look {one_line(str(k), 20)}, "
                    "which no group-sequential verdict of its records shows"
                )
                continue
            stops = [group_sequential.stopping_look(p) for p in planned]
            last = None if None in stops else max(s for s in stops if s is not None)  # every pair has stopped
            sizes = group_sequential.look_sizes(planned[0].items_planned, planned[0].fractions)
            held = len(item_scores(rd, server, task))
            if k != last:
                gate = "does not stop" if last is None else f"stops at look {last}"
                failures.append(
                    f"{name}: its results say it stopped at look {k}, but the gate on the records of its "
                    f"{len(planned)} pair(s) {gate}"
                )
            elif not 1 <= k <= len(sizes) or held != sizes[k - 1]:
                failures.append(
                    f"{name}: its results say it stopped at look {k}, but it holds {held} items, not that look's"
                )
    return stated, failures


@check("sequential", requires=("schemas",))
def sequential_decisions_recompute(ctx: VerifyContext) -> str | Found:
    rows = shipped_verdict_rows(ctx)
    derived = {(v.task, v.candidate, v.baseline): v for v in stated_summary(ctx).evals.verdicts}
    planned = [v for v in derived.values() if v.sequential is not None]
    stated = [r for r in rows if r.get("sequential") is not None]
    if not planned and not stated:
        raise Skipped("no eval plans looks")
    failures = [
        _dropped(v, v.sequential) for v in planned if v.sequential and group_sequential.missing_items(v.sequential)
    ]
    stops, stop_failures = _stated_stops(ctx, derived)
    failures += stop_failures
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
    if failures:  # every failure named in details, past the sentence's length
        return Found(
            counted(failures, "sequential decisions differ from the records"), failed=True, details={"failed": failures}
        )
    stopped = f"; {stops} server(s) stopped at the look where the gate on their records stops" if stops else ""
    return (
        f"{len(planned)} group-sequential decision(s) recompute from the per-item records at the planned looks{stopped}"
    )
