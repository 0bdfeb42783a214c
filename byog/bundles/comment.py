"""The report a PR comment shows: re-rendered by verify from the verified bundle.

Why: report.md is written by the contributor, and any field in it (a plan name, an env string,
a server's argv, a claim's note) could carry HTML, links, images or @mentions that ping people.
The comment is therefore never the shipped report.md: it is ``render_report`` run again on the
recomputed summary and the bundle's files, and the renderer takes every bundle string through
``byog.core.safe_text`` where it enters the markdown. No plot is linked (a comment has no folder
to resolve ``plots/`` against); the Mermaid charts show the same numbers inline. It runs in
verify's limited child, after every check passed.
"""

from __future__ import annotations

from byog.bundles.checks.base import VerifyContext
from byog.bundles.checks.recompute import derived_summary
from byog.report.context import ReportContext, ReportInputs
from byog.report.markdown import REPORT_VERSION, render_report
from byog.report.setup import summary_lines


def render_comment_report(ctx: VerifyContext) -> str:
    return render_report(ctx.run_dir, derived_summary(ctx), ReportInputs(image_base=None))


def verify_summary_lines(ctx: VerifyContext) -> list[str]:
    """The first screen's setup and warnings as verify prints them above its checks, from the recomputed
    summary and the bundle's records (never from its report.md)."""
    report = ReportContext(ctx.run_dir, derived_summary(ctx), ReportInputs(image_base=None), REPORT_VERSION)
    return summary_lines(report)
