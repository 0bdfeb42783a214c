"""``records``: the order and the times a bundle's records claim can be a run's, before anything is
computed or rendered from them.

An interleaved pair's ABBA order is read from its rows' times and its servers' swaps
(``byog.analysis.interleave_records``), never from the labels alone; the time-to-verdict records
(starts, activity spans, swaps) must be possible (``byog.analysis.time_to_verdict.check_records``).
"""

from __future__ import annotations

from byog.analysis.interleave_records import check_interleaving
from byog.analysis.summary import plan_of
from byog.analysis.time_to_verdict import check_records
from byog.bundles.checks.base import Found, VerifyContext, check


@check("records", requires=("schemas",))
def records_are_possible(ctx: VerifyContext) -> Found:
    plan = plan_of(ctx.run_dir)
    interleaving = check_interleaving(ctx.run_dir, plan)
    problems = check_records(ctx.run_dir, plan) + interleaving.problems
    details = {"failed": problems, "interleaved": sorted(f"{s} at {p}" for s, p in interleaving.held)}
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Found(f"{problems[0]}{more}", failed=True, details=details)
    pairs = len(plan.interleaved_pairs)
    held = f"; {pairs} interleaved pair(s) took turns ABBA, as their swaps and times show" if pairs else ""
    return Found(f"the servers' time records are possible{held}", details=details)
