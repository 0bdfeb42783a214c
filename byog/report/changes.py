"""What changed, regressions first (report format 5): per pair and named workload, the range of
each headline metric's speed-up over the points valid on both sides, the slower rows first.

A speed-up is oriented so > 1 means the candidate is better (``byog.report.format.speedup``);
"slower at 5 of 7" counts the points whose speed-up is below 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from byog.analysis import perf_equivalence
from byog.core.safe_text import md_text
from byog.report.context import ReportContext
from byog.report.format import fixed, load_label, speedup, table
from byog.schemas.bench import PointSummary

# the first screen's metrics, in the order a row of one workload lists them
HEADLINE: dict[str, str] = {
    "decode_tok_s": "decode tok/s",
    "ttft_s.p50": "TTFT P50",
    "tpot_s.p50": "TPOT P50",
    "itl_s.p99": "ITL P99",
}


@dataclass(frozen=True)
class Change:
    pair: str
    workload: str
    metric: str
    low: float
    high: float
    slower: int
    n: int

    @property
    def range(self) -> str:
        span = f"{fixed(self.low)}×" if self.low == self.high else f"{fixed(self.low)}× to {fixed(self.high)}×"
        return span

    @property
    def verdict(self) -> str:
        if self.n == 1:
            return "⚠ slower" if self.slower else "not slower"
        if self.slower == self.n:
            return f"⚠ slower at all {self.n} points"
        if self.slower:
            return f"⚠ slower at {self.slower} of {self.n} points"
        return f"not slower at any of {self.n} points"


def workload_label(points: list[PointSummary]) -> str:
    """'decode B=1…64, ISL 1, OSL 1000': the workload, its loads and its shape."""
    first = points[0]
    loads = [load_label(p) for p in points]
    span = loads[0] if len(loads) == 1 else f"{loads[0]}…{loads[-1].split('=')[-1]}"
    return f"{md_text(first.workload)} {span}, ISL {first.isl}, OSL {first.osl}"


def _order(p: PointSummary) -> tuple[float, ...]:
    return (float(p.batch_size or p.concurrency or p.rate or 0),)


def changes(ctx: ReportContext) -> list[Change]:
    found = []
    comparisons = ctx.summary.bench.comparisons
    for candidate, baseline in dict.fromkeys((c.candidate, c.baseline) for c in comparisons):
        mine = [
            c
            for c in comparisons
            if (c.candidate, c.baseline) == (candidate, baseline)
            and not ctx.is_invalid(candidate, c.point_id)
            and not ctx.is_invalid(baseline, c.point_id)
        ]
        shapes: dict[tuple[str, int, int], list[PointSummary]] = {}
        for pid in dict.fromkeys(c.point_id for c in mine):
            p = ctx.points[(candidate, pid)]
            shapes.setdefault((p.workload, p.isl, p.osl), []).append(p)
        for points in shapes.values():
            points.sort(key=_order)
            ids = {p.point_id for p in points}
            for metric, label in HEADLINE.items():
                ratios = [r for c in mine if c.metric == metric and c.point_id in ids if (r := speedup(c)[0])]
                if ratios:
                    found.append(
                        Change(
                            f"{md_text(candidate)} vs {md_text(baseline)}",
                            workload_label(points),
                            label,
                            min(ratios),
                            max(ratios),
                            sum(1 for r in ratios if r < 1),
                            len(ratios),
                        )
                    )
    return sorted(found, key=lambda c: (c.slower == 0, -c.slower / c.n, c.low))


def change_lines(ctx: ReportContext) -> list[str]:
    found = changes(ctx)
    if not found:
        return []
    several = len({c.pair for c in found}) > 1
    header = [*(["Pair"] if several else []), "Workload", "Metric", "Speed-up range", "Slower?"]
    rows = [([c.pair] if several else []) + [c.workload, c.metric, c.range, c.verdict] for c in found]
    # what the CIs behind these ranges leave out (one launch a side) or the calibration they cite
    notes = [f"- {md_text(note)}" for note in perf_equivalence.ci_notes(ctx.summary.bench.comparisons)]
    return [
        "**What changed**, regressions first (speed-up: > 1 is the candidate better; for times baseline / candidate; "
        "valid points only):",
        "",
        *table(header, rows),
        *(["", *notes, ""] if notes else []),
    ]
