"""Report sections of the agentic workload, goodput under an SLO, and the throughput–interactivity frontier.

Small functions the report composes: markdown sections (pure functions of the typed summary, so
verify re-renders them byte for byte) and the frontier PNGs (one per candidate/baseline pair,
drawn with matplotlib's Agg backend, hashed in the bundle, not re-rendered). Each markdown
section renders nothing when the summary holds nothing for it, so runs without agentic
workloads or SLOs keep the report they had.

Frontier axes (``byog.analysis.frontier``): x = tok/s per user ``1 / P50(TPOT)``; y = aggregate
tok/s per GPU: decode tok/s (the decode window) for batch points, output tok/s otherwise, over
the server's GPUs (TP x DP).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from byog.analysis.frontier import FrontierPoint, gpus_of, pareto_frontier, per_gpu
from byog.analysis.summary import plan_of
from byog.core.paths import RunDir
from byog.core.safe_text import md_text as safe_md_text
from byog.report.format import (
    fixed,
    load_label,
    metric,
    num,
    scaled,
    server_records,
    table,
)
from byog.schemas.bench import PointSummary
from byog.schemas.plan import Plan
from byog.schemas.summary import Summary

# --- agentic sessions ---------------------------------------------------------------------------


def _escaper(report_format: int) -> Callable[[Any], str]:
    """Format 2 wrote these fields unescaped: its re-render keeps their inner underscores as written."""
    return safe_md_text if report_format >= 3 else partial(safe_md_text, inner_underscores=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None) -> str:
    return num(scaled(value, 1e3))


def agentic_section(summary: Summary, report_format: int = 3) -> list[str]:
    """Per agentic point: interactivity percentiles, prefix-cache hit rates, TTFT by turn, session time."""
    md_text = _escaper(report_format)
    points = [p for p in summary.bench.points if p.kind == "agentic" and p.sessions is not None]
    if not points:
        return []
    rows, turns = [], []
    for p in points:
        s = p.sessions
        assert s is not None
        rows.append(
            [
                md_text(p.server),
                md_text(p.point_id),
                load_label(p),
                f"{s.sessions} / {s.turns} ({s.subagent_turns})",
                num(metric(p, "tok_s_user.p50")),
                num(metric(p, "tok_s_user.p90")),
                num(metric(p, "tok_s_user.p99")),
                _pct(s.prefix_hit_rate),
                _pct(s.prefix_hit_rate_counters),
                _pct(s.reusable_share),
                fixed(s.session_s.p50),
                fixed(s.session_s.p90),
                "yes" if p.valid else "NO",
            ]
        )
        by_turn = ", ".join(f"{t.turn}: {_ms(t.p50)}" for t in s.ttft_s_by_turn)
        turns.append([md_text(p.server), md_text(p.point_id), by_turn or "–", _ms(s.ttft_s_subagent.p50)])
    lines = [
        "### Agentic sessions",
        "",
        (
            "tok/s/user Pq = 1 / Pq(TPOT) over every turn (P90: the slowest 10 % of turns). Hit rate: cached prompt "
            "tokens / "
            "prompt tokens from the server's usage (per turn) and its /metrics counters (around the point); ideal: "
            "the share "
            "of prompt tokens sent or generated before (what an unbounded cache could serve)."
        ),
        "",
    ]
    lines += table(
        [
            "Server",
            "Point",
            "Load",
            "Sessions / turns (sub-agent)",
            "tok/s/user P50",
            "P90",
            "P99",
            "Hit rate (usage)",
            "(counters)",
            "Ideal",
            "Session P50 (s)",
            "P90 (s)",
            "Valid",
        ],
        rows,
    )
    lines += table(["Server", "Point", "TTFT P50 by turn (ms)", "Sub-agent TTFT P50 (ms)"], turns)
    return lines


# --- goodput and rate searches ------------------------------------------------------------------


def _slo_label(p: PointSummary) -> str:
    g = p.goodput
    assert g is not None
    parts = [
        f"TTFT ≤ {_ms(g.ttft_s)} ms" if g.ttft_s is not None else "",
        f"TPOT ≤ {_ms(g.tpot_s)} ms" if g.tpot_s is not None else "",
        f"E2E ≤ {fixed(g.e2e_s)} s" if g.e2e_s is not None else "",
    ]
    return ", ".join(x for x in parts if x)


def goodput_section(summary: Summary, report_format: int = 3) -> list[str]:
    """Per point with an SLO: the share inside it and the goodput; per rate search: the answer and its probes."""
    md_text = _escaper(report_format)
    points = [p for p in summary.bench.points if p.goodput is not None]
    if not points and not summary.bench.rate_searches:
        return []
    lines = ["### Goodput under the SLO", ""]
    rows = []
    for p in points:
        g = p.goodput
        assert g is not None
        rows.append(
            [
                md_text(p.server),
                md_text(p.point_id),
                load_label(p),
                _slo_label(p),
                f"{g.good} / {g.measured}",
                _pct(g.slo_share),
                _pct(g.target_share),
                "yes" if g.meets_target else "no",
                fixed(g.goodput_req_s),
                num(g.goodput_tok_s),
                "yes" if p.valid else "NO",
            ]
        )
    lines += table(
        [
            "Server",
            "Point",
            "Load",
            "SLO",
            "Good / measured",
            "Share",
            "Target",
            "Meets",
            "Goodput (req/s)",
            "Goodput (tok/s)",
            "Valid",
        ],
        rows,
    )
    searches = []
    for s in summary.bench.rate_searches:
        probes = ", ".join(f"{pr.rate:g}: {_pct(pr.slo_share)}" for pr in s.probes) or "none"
        searches.append(
            [
                md_text(s.server),
                md_text(s.workload),
                num(s.best_rate),
                num(s.failing_rate),
                "yes" if s.converged else "no",
                probes,
                md_text(s.reason),
            ]
        )
    if searches:
        lines += [
            "Rate search: bracketing (x2) then bisection in log space over measured probes (docs/agentic.md).",
            "",
        ]
        lines += table(
            [
                "Server",
                "Workload",
                "Highest rate inside (req/s)",
                "Lowest rate outside",
                "Converged",
                "Probes (rate: share)",
                "Result",
            ],
            searches,
        )
    return lines


# --- the frontier -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FrontierGroup:
    """One sweep of one server: the points of one workload at one ISL/OSL, with their frontier."""

    server: str
    workload: str
    shape: str  # "ISL/OSL" or "sessions"
    y_metric: str  # decode_tok_s or output_tok_s
    gpus: int
    points: tuple[FrontierPoint, ...]  # labelled by point id
    frontier: tuple[FrontierPoint, ...]
    loads: tuple[str, ...]  # each point's load label (B=4, C=2, ...), in points order


def server_gpus(run_dir: RunDir, plan: Plan) -> dict[str, int]:
    """GPUs per server: TP as the server reported it (server.json), else as planned, x DP."""
    reported = {r.name: r.tensor_parallel_size for r in server_records(run_dir)}
    return {
        name: gpus_of(int(reported.get(name) or config.tensor_parallel_size), config.data_parallel_size)
        for name, config in plan.servers.items()
    }


def frontier_groups(summary: Summary, gpus: dict[str, int]) -> list[FrontierGroup]:
    """Every sweep with at least two points (a load axis), per server, in summary order."""
    grouped: dict[tuple[str, str, str], list[PointSummary]] = {}
    for p in summary.bench.points:
        if p.search_probe or p.metrics is None:
            continue  # a search's probes are their own axis (the goodput section); unmeasured points have no place
        shape = "sessions" if p.kind == "agentic" else f"{p.isl}/{p.osl}"
        grouped.setdefault((p.server, p.workload, shape), []).append(p)
    out = []
    for (server, workload, shape), points in grouped.items():
        if len(points) < 2:
            continue
        y_metric = "decode_tok_s" if points[0].kind == "batch" else "output_tok_s"
        n = gpus.get(server, 1)
        fpoints = tuple(
            FrontierPoint(p.point_id, metric(p, "tok_s_user.p50"), per_gpu(metric(p, y_metric), n), p.valid)
            for p in points
        )
        out.append(
            FrontierGroup(
                server,
                workload,
                shape,
                y_metric,
                n,
                fpoints,
                tuple(pareto_frontier(fpoints)),
                tuple(load_label(p) for p in points),
            )
        )
    return out


def frontier_section(summary: Summary, run_dir: RunDir, report_format: int = 3) -> list[str]:
    """The frontier points of each agentic sweep (other sweeps: the PNGs only, so older reports keep their text)."""
    md_text = _escaper(report_format)
    if not any(p.kind == "agentic" for p in summary.bench.points):
        return []
    groups = [g for g in frontier_groups(summary, server_gpus(run_dir, plan_of(run_dir))) if g.shape == "sessions"]
    if not groups:
        return []
    rows = []
    for g in groups:
        on = {p.label for p in g.frontier}
        for p in g.points:
            rows.append(
                [
                    md_text(g.server),
                    md_text(g.workload),
                    md_text(p.label),
                    num(p.tok_s_user),
                    num(p.tok_s_gpu),
                    str(g.gpus),
                    "yes" if p.label in on else ("invalid" if not p.valid else ""),
                ]
            )
    lines = [
        "### Throughput–interactivity frontier",
        "",
        (
            "x = tok/s per user (1 / P50 TPOT), y = output tok/s per GPU; on the frontier: no other valid point of the "
            "sweep is better on both. Plots: plots/frontier-<candidate>-vs-<baseline>.png."
        ),
        "",
    ]
    return lines + table(
        ["Server", "Workload", "Point", "tok/s/user P50", "tok/s per GPU", "GPUs", "On frontier"], rows
    )


def frontier_plot_name(candidate: str, baseline: str) -> str:
    return f"frontier-{candidate}-vs-{baseline}.png"


def write_frontier_plots(run_dir: RunDir, summary: Summary, out_dir: Path) -> list[Path]:
    """One PNG per candidate/baseline pair: each sweep a panel, each server its points, its frontier line, invalid
    points as x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not run_dir.plan_yaml.is_file():
        return []
    plan = plan_of(run_dir)
    groups = frontier_groups(summary, server_gpus(run_dir, plan))
    written = []
    for candidate, baseline in plan.comparisons:
        sweeps = list(dict.fromkeys((g.workload, g.shape) for g in groups if g.server in (candidate, baseline)))
        if not sweeps:
            continue
        fig, axes = plt.subplots(1, len(sweeps), figsize=(5.5 * len(sweeps), 4.2), squeeze=False)
        for ax, (workload, shape) in zip(axes[0], sweeps, strict=True):
            for server, color in ((candidate, "tab:blue"), (baseline, "tab:orange")):
                group = next((g for g in groups if (g.server, g.workload, g.shape) == (server, workload, shape)), None)
                if group is None:
                    continue
                _draw(ax, group, server, color)
                ax.set_ylabel(f"{'decode' if group.y_metric == 'decode_tok_s' else 'output'} tok/s per GPU")
            ax.set_xlabel("tok/s per user (1 / P50 TPOT)")
            ax.set_title(f"{workload} ({shape})", fontsize=10)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        fig.suptitle(f"Throughput–interactivity frontier: {candidate} vs {baseline}", fontsize=11)
        fig.tight_layout()
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / frontier_plot_name(candidate, baseline)
        fig.savefig(path, dpi=110, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written


def _draw(ax: Any, group: FrontierGroup, server: str, color: str) -> None:
    valid = [p for p in group.points if p.valid and p.tok_s_user is not None and p.tok_s_gpu is not None]
    invalid = [p for p in group.points if not p.valid and p.tok_s_user is not None and p.tok_s_gpu is not None]
    ax.scatter([p.tok_s_user for p in valid], [p.tok_s_gpu for p in valid], color=color, s=28, zorder=3)
    if group.frontier:
        ax.plot(
            [p.tok_s_user for p in group.frontier],
            [p.tok_s_gpu for p in group.frontier],
            color=color,
            marker="o",
            label=f"{server} frontier ({group.gpus} GPU{'s' if group.gpus > 1 else ''})",
            zorder=4,
        )
    if invalid:
        ax.scatter(
            [p.tok_s_user for p in invalid],
            [p.tok_s_gpu for p in invalid],
            color=color,
            marker="x",
            s=60,
            label=f"{server} invalid",
            zorder=5,
        )
    for p, load in zip(group.points, group.loads, strict=True):
        if p.tok_s_user is not None and p.tok_s_gpu is not None:
            ax.annotate(
                load, (p.tok_s_user, p.tok_s_gpu), textcoords="offset points", xytext=(4, 4), fontsize=7, color=color
            )
