"""report.md sections in the write-up's shape: decode matrices, speculative acceptance, energy.

- Matrices with rows B and columns TP (one ISL, several servers) or ISL (one server, several
  ISLs), of tok/s/user (P50) and decode step time: the write-up's non-speculative table and its
  long-context step-time matrix.
- Speculative decoding per point: AL and per-position acceptance with 95% CIs, draft coverage,
  and the cross-check ratio (steps/s x AL x B over the measured decode tok/s).
- Energy per point: J/token beside decode tok/s and tok/s/user, mean power, clocks, throttling.

Pure functions of the typed summary and each server's TP (``ReportContext.tensor_parallel``),
fixed number formats, so verify re-renders them byte for byte. Each part writes nothing for a
bundle without its data (no batch points, no speculation, no power samples).
"""

from __future__ import annotations

from collections.abc import Mapping

from byog.analysis.energy import POWER_CAP, cap_share
from byog.core.safe_text import md_text
from byog.report.context import ReportContext
from byog.report.format import fixed, metric, num, scaled, table
from byog.schemas.bench import PointSummary
from byog.schemas.summary import Summary

# matrix quantity -> (label, metric path, display scale)
MATRIX_METRICS: dict[str, tuple[str, str, float]] = {
    "tok_s_user": ("tok/s/user P50", "tok_s_user.p50", 1.0),
    "step": ("decode step time (ms)", "decode_step_s", 1e3),
}


def _batch_points(summary: Summary) -> list[PointSummary]:
    return [p for p in summary.bench.points if p.kind == "batch" and p.batch_size is not None and p.metrics is not None]


def _isl_label(isl: int) -> str:
    return f"ISL {isl // 1024}k" if isl >= 1024 and isl % 1024 == 0 else f"ISL {isl:,}"


def _cell(point: PointSummary | None, path: str, scale: float) -> str:
    if point is None:
        return "–"
    text = num(scaled(metric(point, path), scale))
    return text if point.valid else f"{text}*"


def matrices(summary: Summary, server_tp: Mapping[str, int], report_format: int = 5) -> list[str]:
    """Per workload: rows B; columns ISL (per server) when the workload has several ISLs, else
    columns = its servers labelled with TP. A starred cell is a point flagged invalid."""
    points = _batch_points(summary)
    workloads = list(dict.fromkeys(p.workload for p in points))
    lines: list[str] = []
    for workload in workloads:
        mine = [p for p in points if p.workload == workload]
        isls = sorted({p.isl for p in mine})
        servers = list(dict.fromkeys(p.server for p in mine))
        batches = sorted({p.batch_size for p in mine if p.batch_size is not None})
        by_key = {(p.server, p.isl, p.batch_size): p for p in mine}
        for label, path, scale in MATRIX_METRICS.values():
            if len(isls) > 1:
                for server in servers:
                    rows = [
                        [f"B={b}", *(_cell(by_key.get((server, isl, b)), path, scale) for isl in isls)] for b in batches
                    ]
                    lines += [f"**{md_text(workload)}, {md_text(server)} (TP{server_tp.get(server, 1)}): {label}**", ""]
                    lines += table(["", *(_isl_label(isl) for isl in isls)], rows)
            else:
                (isl,) = isls
                rows = [[f"B={b}", *(_cell(by_key.get((s, isl, b)), path, scale) for s in servers)] for b in batches]
                lines += [f"**{md_text(workload)}, {_isl_label(isl)}, OSL {mine[0].osl}: {label}**", ""]
                lines += table(["", *(f"{md_text(s)} (TP{server_tp.get(s, 1)})" for s in servers)], rows)
    if not lines:
        return []
    return [
        "### Decode matrices",
        "",
        "Rows: batch size B. A cell marked * is a point flagged invalid "
        + ("(see Invalid points, under Performance)." if report_format >= 5 else "(see Points)."),
        "",
        *lines,
    ]


def _interval(ci: list[float] | None, places: int = 2) -> str:
    return f"[{fixed(ci[0], places)}, {fixed(ci[1], places)}]" if ci and len(ci) == 2 else "–"


def speculation(summary: Summary) -> list[str]:
    """AL and per-position acceptance with CIs, coverage and the cross-check ratio of every speculative point."""
    rows = []
    for p in summary.bench.points:
        m = p.metrics
        if m is None or m.acceptance_length is None:
            continue
        per_pos = (
            ", ".join(
                f"{fixed(a)} {_interval(ci)}"
                for a, ci in zip(m.acceptance_per_position or [], m.acceptance_per_position_ci or [], strict=False)
            )
            or "–"
        )
        rows.append(
            [
                md_text(p.server),
                md_text(p.point_id),
                f"{fixed(m.acceptance_length)} {_interval(m.acceptance_length_ci)}",
                per_pos,
                fixed(m.draft_coverage),
                fixed(m.tokens_per_request_step),
                fixed(m.crosscheck_ratio, 3),
            ]
        )
    if not rows:
        return []
    return [
        "### Speculative decoding",
        "",
        "AL = 1 + accepted / drafts (per drafted step); per position: accepted / drafts, Wilson 95% CI; AL's 95% CI "
        "treats drafts as independent. Coverage = drafts / decode steps of all requests: the share of steps that "
        "carried a draft. Cross-check = steps/s x AL x B over the measured decode tok/s: 1 when every step carried "
        "a draft, AL / (tokens per request-step) otherwise (docs/metrics.md).",
        "",
        *table(
            [
                "Server",
                "Point",
                "AL [95% CI]",
                "Per position [95% CI]",
                "Coverage",
                "Tokens/request-step",
                "Cross-check",
            ],
            rows,
        ),
    ]


def energy(summary: Summary) -> list[str]:
    """J/token beside decode tok/s and tok/s/user; the reason where power was not measured."""
    rows, reasons = [], []
    for p in summary.bench.points:
        power = p.metrics.power if p.metrics else None
        if power is None:
            continue
        if not power.available:
            reasons.append(md_text(power.reason or "not measured"))
            continue
        cap = cap_share(power)
        others = {k: v for k, v in (power.throttle or {}).items() if k != POWER_CAP}
        throttle = ", ".join(f"{md_text(k)} {v:.0%}" for k, v in sorted(others.items())) or "none"
        sm = power.sm_clock_mhz
        rows.append(
            [
                md_text(p.server),
                md_text(p.point_id),
                num(metric(p, "decode_tok_s")),
                num(metric(p, "tok_s_user.p50")),
                num(scaled(power.j_per_token, 1e3)),
                num(power.mean_power_w),
                f"{num(sm.mean if sm else None)} / {num(sm.min if sm else None)}",
                "–" if cap is None else f"{cap:.0%}",
                throttle,
                f"{md_text(str(power.energy_source))}, {md_text(str(power.window))}",
            ]
        )
    if rows:
        return [
            "### Energy",
            "",
            *table(
                [
                    "Server",
                    "Point",
                    "decode tok/s",
                    "tok/s/user P50",
                    "mJ/token",
                    "mean W (all GPUs)",
                    "SM MHz mean / min",
                    "Power cap",
                    "Heat/HW slowdown",
                    "Energy from, over",
                ],
                rows,
            ),
        ]
    if reasons:
        return ["### Energy", "", f"Not measured: {sorted(set(reasons))[0]}.", ""]
    return []


def section(ctx: ReportContext) -> list[str]:
    """Every part of this module, in report order."""
    summary = ctx.summary
    return [*matrices(summary, ctx.tensor_parallel, ctx.report_format), *speculation(summary), *energy(summary)]
