"""Numerics: the token-level differential's verdicts, each family's buckets against the A/A
envelope, and the conformance suite (formulas and wording in ``byog.report.numerics``).
Nothing for a run without a numerics section."""

from __future__ import annotations

from byog.report.context import ReportContext
from byog.report.numerics import numerics_section


def section(ctx: ReportContext) -> list[str]:
    return numerics_section(ctx.summary.numerics, ctx.report_format)
