"""Recompute: summary.json and report.md are derived data, so verify derives them again from the
raw rows and holds the shipped copies against the result. Integers, strings and booleans must be
equal; floats agree within a relative 1e-9 (the same code on another CPU or numpy build may
round the last bits differently, never more).
"""

from __future__ import annotations

import json
import math
from typing import Any

from byog.bundles.checks.base import VerifyContext, check
from byog.errors import CheckFailed

FLOAT_REL_TOL = 1e-9
FLOAT_ABS_TOL = 1e-12


def first_difference(shipped: Any, derived: Any, path: str) -> str | None:
    """The first place two JSON values differ, as a sentence; None when they agree."""
    numbers = (int, float)
    if isinstance(shipped, bool) or isinstance(derived, bool):
        return None if shipped is derived else f"{path}: shipped {shipped!r}, recomputed {derived!r}"
    if isinstance(shipped, float) or isinstance(derived, float):
        if isinstance(shipped, numbers) and isinstance(derived, numbers):
            if math.isclose(float(shipped), float(derived), rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL):
                return None
        return f"{path}: shipped {shipped!r}, recomputed {derived!r}"
    if isinstance(shipped, dict) and isinstance(derived, dict):
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
    if isinstance(shipped, list) and isinstance(derived, list):
        if len(shipped) != len(derived):
            return f"{path}: shipped {len(shipped)} entries, recomputed {len(derived)}"
        for index, (a, b) in enumerate(zip(shipped, derived)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        return None
    if type(shipped) is not type(derived) or shipped != derived:
        return f"{path}: shipped {shipped!r}, recomputed {derived!r}"
    return None


def _derive(ctx: VerifyContext) -> dict[str, Any]:
    if ctx.derived is None:
        derive = ctx.derive_summary
        if derive is None:
            from byog.bundles.summary import derive_summary as derive
        # Round-trip through JSON so tuples/numpy scalars compare as what summary.json would hold.
        ctx.derived = json.loads(json.dumps(derive(ctx.run_dir), allow_nan=False))
    return ctx.derived


@check("summary", requires=("schemas",))
def summary_recomputes(ctx: VerifyContext) -> str:
    if not ctx.has("summary.json"):
        raise CheckFailed("the bundle has no summary.json")
    shipped = json.loads(ctx.read("summary.json"))
    difference = first_difference(shipped, _derive(ctx), "summary")
    if difference:
        raise CheckFailed(f"summary.json differs from the numbers recomputed from the raw rows at {difference}")
    bench = shipped.get("bench", {})
    evals = shipped.get("evals", {})
    return (
        f"recomputed from raw rows: {len(bench.get('points', []))} points, {len(bench.get('comparisons', []))} comparisons, "
        f"{len(evals.get('verdicts', []))} verdicts agree"
    )


@check("report", requires=("schemas",))
def report_rerenders(ctx: VerifyContext) -> str:
    from byog.bundles.report import render_report

    if not ctx.has("report.md"):
        raise CheckFailed("the bundle has no report.md")
    shipped = ctx.read("report.md").decode("utf-8")
    rendered = render_report(ctx.run_dir, _derive(ctx))
    if shipped != rendered:
        for number, (a, b) in enumerate(zip(shipped.splitlines(), rendered.splitlines()), start=1):
            if a != b:
                raise CheckFailed(f"report.md line {number} differs from the re-rendered report: {a.strip()[:80]!r}")
        raise CheckFailed("report.md differs from the re-rendered report in its length")
    return "report.md re-renders byte for byte"
