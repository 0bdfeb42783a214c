"""report.md's launch section: how much of the perf noise lies between server launches, and the
A/A margin that labels each comparison (docs/statistics.md §6-7).

Nothing is rendered for a run with one launch per server and no A/A pair, so those reports keep
their bytes.
"""

from __future__ import annotations

import math

from byog.core.safe_text import md_text
from byog.report.context import ReportContext
from byog.report.format import fixed, num, table


def section(ctx: ReportContext) -> list[str]:
    """``## Launches``: the between-launch share per server, point and metric, and the A/A margins."""
    bench = ctx.summary.bench
    if not bench.launch_shares and not bench.aa:
        return []
    lines = ["## Launches", ""]
    if bench.launch_shares:
        how = (
            "CIs above are the launch t interval (the spread of the launches' own values; t with candidate + "
            "baseline launches − 2 degrees of freedom)"
            if ctx.report_format >= 5
            else "CIs above come from a bootstrap over launches, then waves (requests)"
        )
        lines += [
            f"Each server was launched more than once; {how}. Between-launch share: the part of a point's "
            "variance (per wave or request, one-way random-effects ANOVA) that lies between launches rather "
            "than inside one.",
            "",
        ]
        rows = [
            [md_text(s.server), md_text(s.point_id), s.metric, num(s.launches), num(s.units), fixed(s.share)]
            for s in bench.launch_shares
        ]
        lines += table(["Server", "Point", "Metric", "Launches", "Units", "Between-launch share"], rows)
    if bench.aa:
        lines += [
            "A/A margin: the baseline launched twice; per metric, margin = max(1%, 1.96 × RMS of ln(A2/A1) over the "
            "points). A comparison is **equivalent** when its 90% CI lies inside ±margin, **faster**/**slower** when "
            "its 95% CI excludes 1 and the ratio is beyond the margin, else **within noise**.",
            "",
        ]
        rows = [
            [
                md_text(a.baseline),
                a.metric,
                num(len(a.points)),
                f"±{fixed(100 * (math.exp(a.margin) - 1), 1)}%",
                ", ".join(f"{md_text(p.point_id)} {fixed(p.ratio, 3)}" for p in a.points),
            ]
            for a in bench.aa
        ]
        lines += table(["Baseline", "Metric", "Points", "Margin", "A2/A1 per point"], rows)
    return lines
