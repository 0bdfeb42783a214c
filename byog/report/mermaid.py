"""The report's charts as Mermaid ``xychart-beta`` blocks, which GitHub draws in a PR comment and
in report.md without any image hosting.

The same summary numbers as the PNGs (``byog.report.plots``): the decode tok/s speed-up per
point with its 95% CI (``speedup.png``), decode tok/s against batch size (``tok_s_vs_batch.png``)
and the numerics divergence by context position (``numerics.png``). A chart draws valid points
only (Mermaid has no way to mark one): the line under a chart names the invalid points it
left out. A chart needs two points (a line of one draws nothing). xychart-beta has no legend, so
each title says which series is the bars and which the line. Every bundle string in a chart
goes through ``safe_text.mermaid_text``.
"""

from __future__ import annotations

from collections.abc import Iterable

from byog.analysis.numerics import envelope
from byog.core.safe_text import md_text, mermaid_text
from byog.report.format import load_label, metric, num, speedup_axis
from byog.schemas.bench import PointSummary
from byog.schemas.numerics import NumericsSummary
from byog.schemas.summary import Summary

PALETTE = "#4c78a8, #f58518, #f58518"  # bars blue, lines orange (the second line is the CI's other end)
SPEEDUP_PALETTE = f"{PALETTE}, #555555"  # and the line at 1.0 (no effect) grey
HEIGHT = 300  # px; GitHub's default (500) makes three charts fill two screens
MAX_CATEGORIES = 24  # wider than this and GitHub's column squeezes the labels into each other
REPORT_FORMAT = 9  # the report format whose charts these are by default (byog.report.markdown.REPORT_VERSION)
MIN_CATEGORIES = 2  # a line needs two points; one number is in the headline already


def _series(values: Iterable[float | None]) -> str:
    return "[" + ", ".join(num(v) if v is not None else "0" for v in values) + "]"


def _chart(
    title: str,
    x_title: str,
    categories: list[str],
    y_title: str,
    series: list[tuple[str, list[float | None]]],
    *,
    axis: tuple[float, float] | None = None,
    palette: str = PALETTE,
    unique: bool = True,
) -> list[str]:
    """One xychart-beta block; the y axis starts at 0 so bar heights compare honestly, unless
    ``axis`` gives the range (a speed-up chart: around the data, with the line at 1.0)."""
    top = max((v for _, values in series for v in values if v is not None), default=1.0)
    low, high = axis if axis is not None else (0.0, top * 1.1)
    lines = [
        "```mermaid",
        "---",
        "config:",
        "  xyChart:",
        f"    height: {HEIGHT}",
        "  themeVariables:",
        "    xyChart:",
        f'      plotColorPalette: "{palette}"',
        "---",
        "xychart-beta",
        f'    title "{title}"',  # composed by the callers, bundle names through mermaid_text
        f'    x-axis "{x_title}" [' + ", ".join(f'"{c}"' for c in _categories(categories, unique)) + "]",
        f'    y-axis "{y_title}" {num(low, 3)} --> {num(high, 3)}',
    ]
    lines += [f"    {kind} {_series(values)}" for kind, values in series]
    return [*lines, "```", ""]


def _categories(labels: list[str], unique: bool) -> list[str]:
    """The x-axis labels as Mermaid takes them; with ``unique`` (report format 5 on), numbered when
    two would read the same, since xychart draws two bars of one label at one x (one hidden)."""
    shown = [mermaid_text(label, 24) for label in labels]
    if unique and len(set(shown)) < len(shown):
        shown = [mermaid_text(f"{i}. {label}", 24) for i, label in enumerate(labels, 1)]
    return shown


def _left_out(names: list[str]) -> list[str]:
    if not names:
        return []
    shown = ", ".join(md_text(n) for n in names[:8]) + (", …" if len(names) > 8 else "")
    return [f"Left out, flagged invalid: {shown}.", ""]


def _valid(points: dict[tuple[str, str], PointSummary], server: str, point_id: str) -> bool:
    point = points.get((server, point_id))
    return point is not None and point.valid


def speedup_charts(summary: Summary, report_format: int = REPORT_FORMAT) -> list[str]:
    """Per candidate/baseline pair: bars = decode tok/s speed-up per valid point, lines = its 95% CI.

    Report format 4 on: the value axis is ``speedup_axis`` of the numbers drawn (the PNG's too) and a
    grey line marks 1.0; format 3 started the axis at 0."""
    points = {(p.server, p.point_id): p for p in summary.bench.points}
    comps = [c for c in summary.bench.comparisons if c.metric == "decode_tok_s"]
    lines: list[str] = []
    for candidate, baseline in dict.fromkeys((c.candidate, c.baseline) for c in comps):
        mine = [
            c for c in comps if (c.candidate, c.baseline) == (candidate, baseline) and (candidate, c.point_id) in points
        ]
        mine.sort(key=lambda c: _key(points[(candidate, c.point_id)]))
        ok = {c.point_id: _valid(points, candidate, c.point_id) and _valid(points, baseline, c.point_id) for c in mine}
        valid = [c for c in mine if ok[c.point_id]][:MAX_CATEGORIES]
        several = len({points[(candidate, c.point_id)].isl for c in mine}) > 1
        if len(valid) >= MIN_CATEGORIES:
            labels = [_label(points[(candidate, c.point_id)], several) for c in valid]
            if report_format >= 5:  # a load two workloads share is named with its workload
                labels = [
                    f"{label} {points[(candidate, c.point_id)].workload}" if labels.count(label) > 1 else label
                    for label, c in zip(labels, valid, strict=True)
                ]
            series: list[tuple[str, list[float | None]]] = [
                ("bar", [c.ratio for c in valid]),
                ("line", [c.ci_low for c in valid]),
                ("line", [c.ci_high for c in valid]),
            ]
            around = report_format >= 4
            lines += _chart(
                f"speed-up, {mermaid_text(candidate, 40)} vs {mermaid_text(baseline, 40)}",
                "decode tok/s speed-up per point (bars), its 95% CI (lines)"
                + (", no effect at 1.0 (grey line)" if around else ""),
                labels,
                "speed-up (x)",
                [*series, ("line", [1.0] * len(valid))] if around else series,
                axis=speedup_axis(v for _, values in series for v in values) if around else None,
                palette=SPEEDUP_PALETTE if around else PALETTE,
                unique=report_format >= 5,
            )
            lines += _left_out([c.point_id for c in mine if not ok[c.point_id]])
    return lines


def _key(p: PointSummary) -> tuple[int, int, float]:
    return (p.isl, p.osl, float(p.batch_size or p.concurrency or p.rate or 0))


def _label(p: PointSummary, with_isl: bool) -> str:
    return f"{load_label(p)} ISL {p.isl}" if with_isl else load_label(p)


def tok_s_charts(summary: Summary) -> list[str]:
    """Per pair and workload shape: bars = the candidate's decode tok/s per batch size, line = the baseline's."""
    by_key = {
        (p.server, p.workload, p.isl, p.osl, p.batch_size): p
        for p in summary.bench.points
        if p.batch_size and metric(p, "decode_tok_s") is not None
    }
    pairs = dict.fromkeys((c.candidate, c.baseline) for c in summary.bench.comparisons)
    lines: list[str] = []
    for candidate, baseline in pairs:
        shapes = dict.fromkeys((w, isl, osl) for (s, w, isl, osl, _) in by_key if s == candidate)
        for workload, isl, osl in shapes:
            batches = sorted({b for (s, w, i, o, b) in by_key if (w, i, o) == (workload, isl, osl) and s == candidate})
            both = [
                (by_key.get((candidate, workload, isl, osl, b)), by_key.get((baseline, workload, isl, osl, b)))
                for b in batches
            ]
            shown = [(c, b) for c, b in both if c and b and c.valid and b.valid][:MAX_CATEGORIES]
            if len(shown) >= MIN_CATEGORIES:
                lines += _chart(
                    f"decode tok/s, {mermaid_text(candidate, 40)} (bars) vs {mermaid_text(baseline, 40)} (line)",
                    f"batch size ({mermaid_text(workload, 40)}, ISL {isl}, OSL {osl})",
                    [str(c.batch_size) for c, _ in shown],
                    "decode tok/s",
                    [
                        ("bar", [metric(c, "decode_tok_s") for c, _ in shown]),
                        ("line", [metric(b, "decode_tok_s") for _, b in shown]),
                    ],
                )
                bad = [p.point_id for pair in both for p in pair if p is not None and not p.valid]
                lines += _left_out(list(dict.fromkeys(bad)))
    return lines


def numerics_charts(numerics: NumericsSummary | None) -> list[str]:
    """Per comparison, decode family: bars = the candidate's mean |Δlogprob| per position bucket,
    line = the A/A envelope it is judged against (``numerics.png``'s bucket means and envelope)."""
    if numerics is None:
        return []
    lines: list[str] = []
    for c in numerics.comparisons:
        family = next((f for f in c.families if f.family == "decode"), None)
        if family is None:
            continue
        aa = {b.start: b for b in family.aa}
        buckets = [b for b in family.candidate if b.start in aa and b.mean_abs_dlogprob is not None][:MAX_CATEGORIES]
        if len(buckets) < MIN_CATEGORIES:
            continue
        variant = {v.start: v.model_dump() for v in family.variant}
        envelope_line: list[float | None] = [
            envelope(aa[b.start].model_dump(), variant.get(b.start), numerics.tolerance)["mean_abs_dlogprob"]
            for b in buckets
        ]
        lines += _chart(
            f"numerics, decode: {mermaid_text(c.candidate, 40)} (bars) vs the stock envelope (line)",
            "context position: mean abs logprob difference per bucket",
            [b.bucket for b in buckets],
            "nats",
            [("bar", [b.mean_abs_dlogprob for b in buckets]), ("line", envelope_line)],
        )
    return lines


def charts(summary: Summary, report_format: int = REPORT_FORMAT) -> list[str]:
    return speedup_charts(summary, report_format) + tok_s_charts(summary) + numerics_charts(summary.numerics)
