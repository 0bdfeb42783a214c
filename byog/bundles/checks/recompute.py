"""Recompute: summary.json and report.md are derived data, so verify derives them again from the
raw rows and holds the shipped copies against the result (report.md with the renderer of its own
report format, ``byog.report.versions``). Integers, strings and booleans must be
equal; floats agree within a relative 1e-9 (the same code on another CPU or numpy build may
round the last bits differently, never more).
"""

from __future__ import annotations

import json
import math
from typing import Any

from byog.analysis.eval_summary import summarize_evals
from byog.analysis.summary import derive_summary, plan_of
from byog.bundles.checks.base import VerifyContext, check
from byog.core.errors import CheckFailed
from byog.report.versions import LAUNCH_CI_FORMAT, rerender, version_of
from byog.schemas.summary import SCORE_INTERVAL_VERSION, SUMMARY_SCHEMA_VERSION, Summary, as_of_version

FLOAT_REL_TOL = 1e-9
FLOAT_ABS_TOL = 1e-12


def first_difference(shipped: Any, derived: Any, path: str) -> str | None:
    """The first place two JSON values differ, as a sentence; None when they agree."""
    numbers = (int, float)
    if isinstance(shipped, bool) or isinstance(derived, bool):
        return None if shipped is derived else f"{path}: shipped {shipped!r}, recomputed {derived!r}"
    if isinstance(shipped, float) or isinstance(derived, float):
        if (
            isinstance(shipped, numbers)
            and isinstance(derived, numbers)
            and math.isclose(float(shipped), float(derived), rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL)
        ):
            return None
        return f"{path}: shipped {shipped!r}, recomputed {derived!r}"
    if isinstance(shipped, dict) and isinstance(derived, dict):
        return _dict_difference(shipped, derived, path)
    if isinstance(shipped, list) and isinstance(derived, list):
        return _list_difference(shipped, derived, path)
    if type(shipped) is not type(derived) or shipped != derived:
        return f"{path}: shipped {shipped!r}, recomputed {derived!r}"
    return None


def _dict_difference(shipped: dict[str, Any], derived: dict[str, Any], path: str) -> str | None:
    if set(shipped) != set(derived):
        extra = sorted(set(shipped) - set(derived))
        lacking = sorted(set(derived) - set(shipped))
        detail = f"extra keys {extra}" if extra else f"missing keys {lacking}"
        return f"{path}: {detail}"
    for key in sorted(shipped):
        found = first_difference(shipped[key], derived[key], f"{path}.{key}")
        if found:
            return found
    return None


def _list_difference(shipped: list[Any], derived: list[Any], path: str) -> str | None:
    if len(shipped) != len(derived):
        return f"{path}: shipped {len(shipped)} entries, recomputed {len(derived)}"
    for index, (a, b) in enumerate(zip(shipped, derived, strict=True)):
        found = first_difference(a, b, f"{path}[{index}]")
        if found:
            return found
    return None


def derived_summary(ctx: VerifyContext) -> Summary:
    """The summary recomputed from the bundle's raw records (once per verify)."""
    if ctx.derived is None:
        ctx.derived = derive_summary(ctx.run_dir)
    return ctx.derived


def shipped_version(ctx: VerifyContext) -> int | None:
    shipped = ctx.parsed.get("summary.json")
    version = shipped.get("schema_version") if isinstance(shipped, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def shipped_verdict_rows(ctx: VerifyContext) -> list[dict[str, Any]]:
    """The eval verdicts summary.json states, as shipped (hostile: only the rows that are objects)."""
    shipped = ctx.parsed.get("summary.json")
    rows = ((shipped or {}).get("evals") or {}).get("verdicts") if isinstance(shipped, dict) else None
    return [r for r in rows or [] if isinstance(r, dict)] if isinstance(rows, list) else []


def verdict_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """A shipped verdict row's (task, candidate, baseline), as text."""
    return str(row.get("task")), str(row.get("candidate")), str(row.get("baseline"))


def stated_summary(ctx: VerifyContext) -> Summary:
    """The summary recomputed as the byog that wrote the bundle computed it, to compare its statements
    with: before summary schema 11 (``SCORE_INTERVAL_VERSION``) binary items took the paired t."""
    derived = derived_summary(ctx)
    version = shipped_version(ctx)
    if version is None or version >= SCORE_INTERVAL_VERSION:
        return derived
    if ctx.derived_paired_t is None:
        evals = summarize_evals(ctx.run_dir, plan_of(ctx.run_dir), score_interval=False)
        ctx.derived_paired_t = derived.model_copy(update={"evals": evals})
    return ctx.derived_paired_t


@check("summary", requires=("schemas",))
def summary_recomputes(ctx: VerifyContext) -> str:
    if not ctx.has("summary.json"):
        raise CheckFailed("the bundle has no summary.json")
    shipped = ctx.parsed["summary.json"]  # parsed within bounds by the bounds check
    # Round-trip through JSON so the recomputed numbers compare as what summary.json would hold.
    recomputed = json.loads(json.dumps(stated_summary(ctx).to_json(), allow_nan=False))
    version = shipped_version(ctx)
    if version is not None and 1 <= version < SUMMARY_SCHEMA_VERSION:
        # An older byog's summary: both sides without what it did not compute, or computed otherwise
        # (byog.schemas.summary.CHANGED_IN); claims, policy and the report read the recomputed one.
        shipped, recomputed = as_of_version(shipped, version), as_of_version(recomputed, version)
    difference = first_difference(shipped, recomputed, "summary")
    if difference:
        raise CheckFailed(f"summary.json differs from the numbers recomputed from the raw rows at {difference}")
    bench = shipped.get("bench") or {}
    evals = shipped.get("evals") or {}
    return (
        f"recomputed from raw rows: {len(bench.get('points', []))} points, {len(bench.get('comparisons', []))} "
        "comparisons, "
        f"{len(evals.get('verdicts', []))} verdicts agree"
    )


@check("report", requires=("schemas",))
def report_rerenders(ctx: VerifyContext) -> str:
    if not ctx.has("report.md"):
        raise CheckFailed("the bundle has no report.md")
    try:
        shipped = ctx.read("report.md").decode("utf-8")
    except UnicodeDecodeError as err:
        raise CheckFailed(f"report.md is not UTF-8 (byte {err.start})") from None
    # Re-rendered by the renderer of the report format it is written in (byog.report.versions).
    declared = ctx.statement.predicate.report_format if ctx.statement is not None else None
    # A report before format 5 was written from CIs computed without the launch t interval.
    older = version_of(shipped, declared) < LAUNCH_CI_FORMAT
    summary = stated_summary(ctx)
    if older:
        summary = derive_summary(ctx.run_dir, launch_ci=False).model_copy(update={"evals": summary.evals})
    version, rendered = rerender(shipped, declared, ctx.run_dir, summary)
    if shipped != rendered:
        for number, (a, b) in enumerate(zip(shipped.splitlines(), rendered.splitlines(), strict=True), start=1):
            if a != b:
                raise CheckFailed(f"report.md line {number} differs from the re-rendered report: {a.strip()[:80]!r}")
        raise CheckFailed("report.md differs from the re-rendered report in its length")
    return f"report.md (report format {version}) re-renders byte for byte"
