"""Performance: the matrices of the write-up's shape.

Rows are the load (B, C or the request rate); columns are the candidate's value, the
baseline's, and the speed-up with its 95% bootstrap CI. One table per metric, workload, OSL,
candidate/baseline pair and ISL, the pair named once in its heading, so a table stays four
columns wide however many candidates there are (report format 2: one table per metric,
workload and OSL, a column group per pair and ISL). A point flagged invalid on either side
has its numbers struck through and marked "⚠ invalid" in every cell it reaches, and is listed
with its reasons under "Invalid points".
"""

from __future__ import annotations

from dataclasses import dataclass

from byog.analysis.validity import comparison_invalid_reasons, remeasured_note
from byog.core.safe_text import md_text
from byog.report.context import ReportContext
from byog.report.format import INVALID, INVALID_V2, METRICS, ci, metric, num, scaled, speedup, struck, table, times
from byog.schemas.bench import PointComparison, PointSummary

CONDITIONS = "≠"  # the two servers measured under different GPU conditions


def _mark(ctx: ReportContext) -> str:
    return INVALID if ctx.report_format >= 3 else INVALID_V2


@dataclass(frozen=True)
class _Group:
    """One column group: a pair (or a lone server) at one ISL."""

    candidate: str
    baseline: str | None  # None: a server in no pair, shown on its own
    isl: int
    label: str


def _load_key(p: PointSummary) -> float:
    return float(p.batch_size or p.concurrency or p.rate or p.speedup or 0)


def _load_cell(p: PointSummary) -> str:
    if p.batch_size is not None:
        return str(p.batch_size)
    if p.concurrency is not None:
        return str(p.concurrency)
    if p.speedup is not None:
        return f"x{p.speedup:g}"
    return f"{p.rate:g}" if p.rate is not None else "–"


def _load_header(p: PointSummary) -> str:
    if p.kind == "agentic":  # synthetic sessions in flight, or a replayed trace's speed-up
        return "trace speed-up" if p.speedup is not None else "sessions"
    return {"batch": "B", "concurrency": "C", "rate": "req/s"}[p.kind]


def _pairs(ctx: ReportContext) -> list[tuple[str, str]]:
    return list(dict.fromkeys((c.candidate, c.baseline) for c in ctx.summary.bench.comparisons))


def _pair_labels(ctx: ReportContext, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """TP<n> when every pair's candidate has its own TP size, else 'candidate vs baseline'."""
    tps = [ctx.tensor_parallel.get(candidate) for candidate, _ in pairs]
    if len(pairs) > 1 and all(tps) and len(set(tps)) == len(tps):
        return {pair: f"TP{tp}" for pair, tp in zip(pairs, tps, strict=True)}
    return {pair: f"{md_text(pair[0])} vs {md_text(pair[1])}" for pair in pairs}


def _value(ctx: ReportContext, server: str, point_id: str, name: str, scale: float) -> str:
    point = ctx.points.get((server, point_id))
    if point is None:
        return "–"
    text = num(scaled(metric(point, name), scale))
    mark = _mark(ctx)
    return struck(text, mark) if not point.valid and text != "–" else (mark if not point.valid else text)


def _speedup_cell(ctx: ReportContext, c: PointComparison | None) -> str:
    if c is None:
        return "–"
    value, low, high = speedup(c)
    text = f"{times(value)} {ci(low, high)}"
    if comparison_invalid_reasons(ctx.points, c):
        return struck(text, _mark(ctx))
    flag = f" {CONDITIONS}" if c.conditions else ""
    # the A/A margin's label (faster, slower, equivalent, within noise), or "screening" for one launch per side
    if c.label:
        return f"{text} ({c.label}){flag}"
    return text + (" (within noise)" if c.within_noise else "") + flag


def _matrix(
    ctx: ReportContext,
    name: str,
    points: list[PointSummary],
    groups: list[_Group],
    comparisons: dict[tuple[str, str, str, str], PointComparison],
) -> list[str]:
    label, scale, _ = METRICS[name]
    by_load: dict[float, dict[tuple[str, int], PointSummary]] = {}
    for p in points:
        by_load.setdefault(_load_key(p), {})[(p.server, p.isl)] = p
    many = len(groups) > 1
    header = [_load_header(points[0])]
    for g in groups:
        prefix = f"{g.label}: " if many else ""
        if ctx.report_format >= 3:  # the pair is named in the heading
            header += ["value"] if g.baseline is None else ["candidate", "baseline", "speed-up [95% CI]"]
        elif g.baseline is None:
            header.append(f"{prefix}{md_text(g.candidate)}")
        else:
            header += [
                f"{prefix}{md_text(g.candidate)}",
                f"{prefix}{md_text(g.baseline)}",
                f"{prefix}speed-up [95% CI]",
            ]
    rows, any_number = [], False
    for load in sorted(by_load):
        here = by_load[load]
        sample = next(iter(here.values()))
        row = [_load_cell(sample)]
        for g in groups:
            cand = here.get((g.candidate, g.isl))
            pid = cand.point_id if cand else None
            if g.baseline is None:
                row.append(_value(ctx, g.candidate, pid, name, scale) if pid else "–")
                continue
            base = here.get((g.baseline, g.isl))
            pid = pid or (base.point_id if base else None)
            if pid is None:
                row += ["–", "–", "–"]
                continue
            row += [
                _value(ctx, g.candidate, pid, name, scale),
                _value(ctx, g.baseline, pid, name, scale),
                _speedup_cell(ctx, comparisons.get((pid, g.candidate, g.baseline, name))),
            ]
        any_number = any_number or any(cell not in ("–", _mark(ctx)) for cell in row[1:])
        rows.append(row)
    if not any_number:
        return []
    return table(header, rows)


def _groups(ctx: ReportContext, points: list[PointSummary]) -> list[_Group]:
    pairs = _pairs(ctx)
    labels = _pair_labels(ctx, pairs)
    isls = sorted({p.isl for p in points})
    servers = {p.server for p in points}
    paired = {s for pair in pairs for s in pair}
    groups = []
    for isl in isls:
        suffix = f", ISL {isl}" if len(isls) > 1 else ""
        for pair in pairs:
            if pair[0] in servers or pair[1] in servers:
                groups.append(_Group(pair[0], pair[1], isl, labels[pair] + suffix))
        for server in sorted(servers - paired):
            groups.append(_Group(server, None, isl, md_text(server) + suffix))
    return groups


def _pair_heading(group: _Group) -> str:
    if group.baseline is None:
        return md_text(group.candidate)
    return f"{md_text(group.candidate)} vs {md_text(group.baseline)}"


def _invalid_list(ctx: ReportContext) -> list[str]:
    if not ctx.invalid:
        return []
    lines = [
        f"### {_mark(ctx)} Invalid points" if ctx.report_format < 3 else "### ⚠ Invalid points",
        "",
        "Their numbers are shown struck through and are not results.",
        "",
    ]
    for p in ctx.invalid:
        reasons = "; ".join(p.invalid_reasons) or "no reason recorded"
        again = remeasured_note(p)
        lines.append(
            f"- {md_text(p.server)} {md_text(p.point_id)}: {md_text(reasons)}" + (f" ({again})" if again else "")
        )
    return [*lines, ""]


def _remeasured_list(ctx: ReportContext) -> list[str]:
    """Valid points that were invalid for a transient cause first (the invalid ones say it in their list)."""
    lines = [
        f"- {md_text(p.server)} {md_text(p.point_id)}: {remeasured_note(p)}"
        for p in ctx.summary.bench.points
        if p.valid and p.remeasured
    ]
    if not lines:
        return []
    head = "Measured again after a transient cause (client saturated, GPU clocks slowed); every attempt stays in"
    return [f"{head} the bundle (bench/<server>/attempts/):", "", *lines, ""]


def _conditions_list(ctx: ReportContext) -> list[str]:
    flagged = list(
        dict.fromkeys(
            (c.point_id, c.candidate, c.baseline, c.conditions) for c in ctx.summary.bench.comparisons if c.conditions
        )
    )
    if not flagged:
        return []
    lines = [
        f"### {CONDITIONS} Different GPU conditions",
        "",
        "The speed-up at these points compares servers that ran at different SM clocks or power-cap shares "
        "(docs/metrics.md, Power cap): it measures the power state as well as the software.",
        "",
    ]
    lines += [
        f"- {md_text(pid)}, {md_text(cand)} vs {md_text(base)}: {md_text(str(why))}" for pid, cand, base, why in flagged
    ]
    return [*lines, ""]


def section(ctx: ReportContext) -> list[str]:
    points = ctx.summary.bench.points
    lines = ["## Performance", ""]
    if not points:
        return [*lines, "No bench points in this plan.", ""]
    comparisons = {(c.point_id, c.candidate, c.baseline, c.metric): c for c in ctx.summary.bench.comparisons}
    workloads = list(dict.fromkeys((p.workload, p.osl) for p in points))
    how = "95% bootstrap over waves"
    if ctx.report_format >= 5:
        how = "95%, the launch t interval where a side ran several launches, else a bootstrap over one launch's waves"
    lines += [
        "Speed-up > 1 means the candidate is better (for times: baseline / candidate); "
        f"CI: {how} (batch) or requests. {_mark(ctx)}: the point is flagged invalid.",
        "",
    ]
    for name, (label, _, _) in METRICS.items():
        for workload, osl in workloads:
            mine = [p for p in points if (p.workload, p.osl) == (workload, osl)]
            isls = sorted({p.isl for p in mine})
            if ctx.report_format < 3:
                matrix = _matrix(ctx, name, mine, _groups(ctx, mine), comparisons)
                where = f"{md_text(workload)}, " + (f"ISL {isls[0]}, " if len(isls) == 1 else "") + f"OSL {osl}"
                lines += [f"### {label}: {where}", "", *matrix] if matrix else []
                continue
            for group in _groups(ctx, mine):
                matrix = _matrix(ctx, name, [p for p in mine if p.isl == group.isl], [group], comparisons)
                where = f"{md_text(workload)}, ISL {group.isl}, OSL {osl}"
                lines += [f"### {label}: {_pair_heading(group)}, {where}", "", *matrix] if matrix else []
    prompts = sorted({p.prompts for p in points if p.prompts})
    if prompts:
        lines += [f"Prompts: {md_text(', '.join(prompts))}.", ""]
    return lines + _invalid_list(ctx) + _remeasured_list(ctx) + _conditions_list(ctx)
