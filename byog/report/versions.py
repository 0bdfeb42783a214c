"""Which renderer wrote a report.md, and re-rendering it with that one (verify's report check).

The format is what the signed manifest declares (``predicate.report_format``, written by pack
from the renderer's marker, ``<!-- byog report v3 -->`` on report.md's first line), and
report.md's marker must say the same. A manifest packed before formats were declared names
none: there the marker decides, and a report.md with no marker is format 1, the only format
that had none (such a manifest cannot declare 3 or later, because every byog that writes those
declares them). Every format this byog knows is kept re-renderable, so verify holds an old
bundle's report.md against exactly the renderer that wrote it, byte for byte. Every format
re-renders with today's escaping (``byog.core.safe_text``) and marks invalid points, so
declaring an older format gains a forger nothing: that format's renderer must reproduce the
file exactly. A format newer than this byog knows cannot be checked: verify says so and asks
for an upgrade.
"""

from __future__ import annotations

from collections.abc import Callable

from byog.core.errors import CheckFailed
from byog.core.paths import RunDir
from byog.report import legacy_v1
from byog.report.markdown import MARKER_PREFIX, REPORT_VERSION, render_report
from byog.schemas.summary import Summary

Renderer = Callable[[RunDir, Summary], str]

FIRST_DECLARED = 3  # the first format a manifest declares; older manifests name none
LAUNCH_CI_FORMAT = 5  # the first format written from the launch t interval (docs/statistics.md §6)


def _render_v2(run_dir: RunDir, summary: Summary) -> str:
    return render_report(run_dir, summary, report_format=2)


def _render_v3(run_dir: RunDir, summary: Summary) -> str:
    return render_report(run_dir, summary, report_format=3)


def _render_v4(run_dir: RunDir, summary: Summary) -> str:
    return render_report(run_dir, summary, report_format=4)


def _render_v5(run_dir: RunDir, summary: Summary) -> str:
    return render_report(run_dir, summary, report_format=5)


def _render_v6(run_dir: RunDir, summary: Summary) -> str:
    return render_report(run_dir, summary, report_format=6)


def _render_v7(run_dir: RunDir, summary: Summary) -> str:
    return render_report(run_dir, summary, report_format=7)


def _render_v8(run_dir: RunDir, summary: Summary) -> str:
    return render_report(run_dir, summary, report_format=8)


RENDERERS: dict[int, Renderer] = {
    1: legacy_v1.render_report,  # the renderer before versions (commit 85b2f8f), with today's escaping
    2: _render_v2,  # matrices with one column group per pair, left-aligned
    3: _render_v3,  # Mermaid charts from 0, no flipped items, speed-up ends named by load only
    # e-notation (1.33e+04), claims one row each, no setup or warnings on the first screen, hierarchical bootstrap CI
    4: _render_v4,
    # the eval-delta plot's alt text names a 95% CI; wide tables scroll; no pair line in the setup
    5: _render_v5,
    # report.md as format 7 writes it, marker aside; its attestations ignore the first screen's warnings
    6: _render_v6,
    # no wake-check column in the time-to-verdict table; a method line for interleaved pairs only
    7: _render_v7,
    # an operating-point eval's strata line without the batch each server measured over the stratum; a run
    # that ran no bench says "measuring 0.0% of ..." where the time went, not "no bench; of ..."
    8: _render_v8,
    REPORT_VERSION: render_report,
}


def marker_format(report: str) -> int | None:
    """The format report.md's first line names, or None when it has no byog marker."""
    first = report.split("\n", 1)[0]
    if not first.startswith(MARKER_PREFIX):
        return None
    number = first[len(MARKER_PREFIX) : -len(" -->")] if first.endswith(" -->") else ""
    if number.isdigit() and not number.startswith("0"):
        return int(number)
    raise CheckFailed(f"report.md's first line {first[:60]!r} is not a byog report marker")


def version_of(report: str, declared: int | None) -> int:
    """The format of a report.md: what the manifest declares (the marker must agree), else the marker."""
    marked = marker_format(report)
    if declared is not None:
        if (marked or 1) != declared:
            said = f"says format {marked}" if marked else "has no format marker"
            raise CheckFailed(f"the manifest declares report format {declared}, but report.md {said}")
        return declared
    if marked is None:
        return 1
    if marked >= FIRST_DECLARED:
        raise CheckFailed(
            f"report.md says report format {marked}, which the manifest must declare, and it declares none"
        )
    return marked


def rerender(report: str, declared: int | None, run_dir: RunDir, summary: Summary) -> tuple[int, str]:
    """(format, the report that format's renderer writes for this run directory and summary)."""
    version = version_of(report, declared)
    renderer = RENDERERS.get(version)
    if renderer is None:
        raise CheckFailed(
            f"report.md is in report format {version}, newer than this byog renders "
            f"(up to {max(RENDERERS)}); upgrade byog to check it"
        )
    return version, renderer(run_dir, summary)
