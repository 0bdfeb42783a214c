"""Agentic sessions, goodput under an SLO and the throughput–interactivity frontier.

The formulas live in ``byog.report.agentic``; this section puts its three parts where a reviewer
meets them. Each part writes nothing for a bundle without its data (no agentic point, no SLO, no
sweep of a candidate/baseline pair), so older reports keep their bytes.
"""

from __future__ import annotations

from byog.report.agentic import agentic_section, frontier_section, goodput_section
from byog.report.context import ReportContext


def section(ctx: ReportContext) -> list[str]:
    version = ctx.report_format
    return [
        *agentic_section(ctx.summary, version),
        *goodput_section(ctx.summary, version),
        *frontier_section(ctx.summary, ctx.run_dir, version),
    ]
