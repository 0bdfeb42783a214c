"""Strata: an eval whose plan sets ``operating_points`` ran each item at its stratum's point, and the
per-stratum verdicts the bundle states are the ones its per-item records give.

Every row's ``num_concurrent`` must be the point its item id and sha256 assign
(``byog.analysis.strata.operating_point``), on every server; then each stratum's verdict and the
"accuracy depends on the operating point" answer are recomputed from items.parquet and plan.yaml,
and a bundle that states another (an edited stratum verdict) fails here with the eval named, before
the whole-summary comparison of the summary check.
"""

from __future__ import annotations

from typing import Any

from byog.analysis.strata import stratum_problems
from byog.analysis.summary import plan_of
from byog.bundles.checks.base import Skipped, VerifyContext, check, counted
from byog.bundles.checks.recompute import shipped_verdict_rows, stated_summary, verdict_key
from byog.core.errors import CheckFailed
from byog.core.safe_text import one_line
from byog.schemas.evals import StrataRecord


def _said(record: StrataRecord | None) -> str:
    if record is None:
        return "no strata"
    verdicts = ", ".join(f"{s.operating_point}: {s.verdict}" for s in record.strata)
    return f"{verdicts}; depends: {record.depends}"


def _shipped_said(record: Any) -> str:
    if not isinstance(record, dict):
        return "no strata"
    strata = record.get("strata")
    strata = strata if isinstance(strata, list) else []
    verdicts = ", ".join(
        f"{one_line(str(s.get('operating_point')), 12)}: {one_line(str(s.get('verdict')), 20)}"
        for s in strata
        if isinstance(s, dict)
    )
    return f"{verdicts}; depends: {one_line(str(record.get('depends')), 20)}"


@check("strata", requires=("schemas",))
def strata_recompute(ctx: VerifyContext) -> str:
    plan = plan_of(ctx.run_dir)
    rows = shipped_verdict_rows(ctx)
    stated = [r for r in rows if r.get("strata") is not None]
    if not any(spec.operating_points for spec in plan.evals) and not stated:
        raise Skipped("no eval plans operating points")
    failures = stratum_problems(ctx.run_dir, plan)
    derived = {(v.task, v.candidate, v.baseline): v.strata for v in stated_summary(ctx).evals.verdicts}
    for row in rows:
        key = verdict_key(row)
        mine, theirs = derived.get(key), row.get("strata")
        if _said(mine) != _shipped_said(theirs):
            failures.append(
                f"{one_line(' '.join(key[:2]) + ' vs ' + key[2], 120)}: the bundle states {_shipped_said(theirs)}; "
                f"its per-item records and plan give {_said(mine)}"
            )
    if failures:
        raise CheckFailed(counted(failures, "stratified verdicts differ from the records"))
    n = sum(1 for v in derived.values() if v is not None)
    return f"{n} stratified verdict(s) recompute from the per-item records, each item at its operating point"
