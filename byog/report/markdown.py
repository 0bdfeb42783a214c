"""report.md: what a contributor pastes into the PR, what a maintainer reads first, and what
``byog verify`` re-renders byte for byte.

``render_report(run_dir, summary, inputs)`` is a pure function of the typed summary, a few raw
files of the run directory (env.json, servers/*/server.json, signer.json, claims.yaml,
reproduction.json) and the extra inputs of a re-render (``ReportInputs``: claims, reproductions,
where the plots live). No clock, no byog version, no machine, fixed number formats. A bundle's
own report.md is rendered with ``ReportInputs()``, and so is verify's re-render.

The report is a list of sections, each a small function in its own module under
``byog/report/sections/``, run in the order of ``SECTIONS`` below. To add one:

1. write ``byog/report/sections/<name>.py`` with ``section(ctx: ReportContext) -> list[str]``
   (markdown lines, the last one ""); read only ``ctx`` (``byog.report.context``): the summary,
   the run directory's raw files through its tolerant readers, ``ctx.inputs``;
2. pass every string that comes from the bundle through ``byog.core.safe_text``'s ``md_text``
   or ``md_code``, once, where it enters the markdown: it must never become markdown (a heading,
   a link, an image, a mention, a fake "verified");
3. return ``[]`` when the bundle has none of the section's data, so adding the section does not
   change the report of any bundle packed before it (and needs no new ``REPORT_VERSION``);
4. put it into ``SECTIONS`` where a reviewer should meet it.

Changing what an existing section writes for data that older bundles have changes their
report: bump ``REPORT_VERSION`` and keep the previous renderer re-renderable in
``byog.report.versions`` (docs/bundles.md, "Report versions"); a section that writes a format
differently reads ``ctx.report_format``.
"""

from __future__ import annotations

from collections.abc import Callable

from byog.core.paths import RunDir
from byog.core.safe_text import md_text
from byog.report.context import ReportContext, ReportInputs
from byog.report.format import align_numbers, number_style
from byog.report.sections import (
    accuracy,
    agentic,
    decode,
    environment,
    figures,
    headline,
    launches,
    numerics,
    performance,
    reproduction,
    signer,
    time_spent,
)
from byog.schemas.summary import Summary

REPORT_VERSION = 9
MARKER_PREFIX = "<!-- byog report v"
MARKER = f"{MARKER_PREFIX}{REPORT_VERSION} -->"  # report.md's first line: which renderer wrote it

Section = Callable[[ReportContext], list[str]]

SECTIONS: tuple[Section, ...] = (
    headline.section,  # claims and verdicts at a glance, speed-up range, invalid count
    performance.section,  # matrices per metric: rows load, columns pair x ISL
    agentic.section,  # sessions, goodput under the SLO, the throughput–interactivity frontier
    decode.section,  # tok/s/user and step-time matrices, speculative acceptance, energy (when measured)
    launches.section,  # between-launch variance and A/A margins (only with several launches)
    time_spent.section,  # time to verdict and the wake-up check (only when servers recorded activity)
    figures.section,  # the plots, embedded
    accuracy.section,  # verdicts, then scores
    numerics.section,  # token-level differential and conformance (only with a numerics section)
    reproduction.section,  # who re-ran which points, on what (only when there is a reproduction)
    environment.section,  # host table, server table
    signer.section,
)


def _title(ctx: ReportContext) -> list[str]:
    plan = ctx.summary.plan
    candidates = ", ".join(md_text(c) for c in plan.candidates) or "none"
    return [
        f"{MARKER_PREFIX}{ctx.report_format} -->",
        f"# byog report: {md_text(plan.name)}",
        "",
        f"Candidates: {candidates}; baseline: {md_text(plan.baseline)}. Every number below is derived from the raw "
        "per-request and per-item records in this bundle.",
        "",
    ]


def render_report(
    run_dir: RunDir, summary: Summary, inputs: ReportInputs | None = None, *, report_format: int = REPORT_VERSION
) -> str:
    """report.md in ``report_format`` (2 or the current one; format 1 is ``byog.report.legacy_v1``)."""
    ctx = ReportContext(run_dir, summary, inputs or ReportInputs(), report_format=report_format)
    lines = _title(ctx)
    with number_style(report_format):
        for section in SECTIONS:
            lines += section(ctx)
    if report_format >= 3:
        lines = align_numbers(lines)
    return "\n".join(lines).rstrip("\n") + "\n"
