"""Which renderer wrote a report.md, and re-rendering it with that one (verify's report check).

report.md's first line names its format (``<!-- byog report v2 -->``); a report with no such
line was written before versions existed: format 1. Every format this byog knows is kept
re-renderable, so verify holds an old bundle's report.md against exactly the renderer that
wrote it, byte for byte, and a changed renderer never fails an honest old bundle. The version
is read from the (signed) report itself: claiming an older format gains a forger nothing,
because that format's renderer must then reproduce the file exactly. A format newer than this
byog knows cannot be checked: verify says so and asks for an upgrade.
"""

from __future__ import annotations

from collections.abc import Callable

from byog.core.errors import CheckFailed
from byog.core.paths import RunDir
from byog.report import legacy_v1
from byog.report.markdown import MARKER_PREFIX, REPORT_VERSION, render_report
from byog.schemas.summary import Summary

Renderer = Callable[[RunDir, Summary], str]

RENDERERS: dict[int, Renderer] = {
    1: legacy_v1.render_report,  # frozen copy of the renderer before versions (commit 85b2f8f)
    REPORT_VERSION: render_report,
}


def version_of(report: str) -> int:
    """The format of a report.md: its first line's marker, or 1 when it has none."""
    first = report.split("\n", 1)[0]
    if first.startswith(MARKER_PREFIX) and first.endswith(" -->"):
        number = first[len(MARKER_PREFIX) : -len(" -->")]
        if number.isdigit() and not number.startswith("0"):
            return int(number)
        raise CheckFailed(f"report.md's first line {first[:60]!r} is not a byog report marker")
    return 1


def rerender(report: str, run_dir: RunDir, summary: Summary) -> tuple[int, str]:
    """(format, the report that format's renderer writes for this run directory and summary)."""
    version = version_of(report)
    renderer = RENDERERS.get(version)
    if renderer is None:
        raise CheckFailed(
            f"report.md is in report format {version}, newer than this byog renders "
            f"(up to {max(RENDERERS)}); upgrade byog to check it"
        )
    return version, renderer(run_dir, summary)
