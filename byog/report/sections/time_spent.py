"""report.md's time-to-verdict section: where the run's wall time went, per server and for the run,
and an interleaved pair's wake-up check (byog.analysis.time_to_verdict, bench_summary).

Nothing is rendered for a run whose servers recorded no activity spans (every bundle packed before
byog recorded them), so those reports keep their bytes.
"""

from __future__ import annotations

from byog.analysis.phases import shares_line
from byog.core.safe_text import md_text
from byog.report.context import ReportContext
from byog.report.format import fixed, table
from byog.schemas.summary import TimeSpent

CHECKING_FORMAT = 8  # the first report format with a column for the wake checks (earlier ones counted them idle)
NO_BENCH_FORMAT = 9  # the first report format whose phase line leads a run without bench with "no bench"


def _cells(spent: TimeSpent, checking: bool) -> list[str]:
    share = "—" if spent.measuring_share is None else f"{fixed(100 * spent.measuring_share, 1)}%"
    return [
        fixed(spent.wall_s, 0),
        fixed(spent.starting_s, 0),
        fixed(spent.measuring_s, 0),
        fixed(spent.evaluating_s, 0),
        fixed(spent.swapping_s, 1),
        *([fixed(spent.checking_s, 1)] if checking else []),
        fixed(spent.idle_s, 0),
        share,
    ]


def section(ctx: ReportContext) -> list[str]:
    """``## Time to verdict``: seconds starting, measuring, evaluating, swapping, checking wakes and idle."""
    spent = ctx.summary.time_to_verdict
    effects = ctx.summary.bench.wake_effects
    phases = ctx.summary.phases
    if spent is None and not effects and phases is None:
        return []
    lines = ["## Time to verdict", ""]
    if phases is not None:
        bench = bool(ctx.summary.bench.points) or ctx.report_format < NO_BENCH_FORMAT
        said = shares_line(phases, bench=bench)
        lines += [f"Where the time went (phases.json): {said}.", ""]
    if spent is not None:
        checking = ctx.report_format >= CHECKING_FORMAT
        lines += [
            "Seconds of wall time, from each server's recorded start-ups and activity spans; evaluating holds the "
            "evals and numerics passes; "
            + ("checking the wake-integrity fingerprints of an interleaved pair; " if checking else "")
            + "idle is the rest (prompt building, snapshots, stops, a sleeping partner).",
            "",
        ]
        rows = [["run", *_cells(spent.run, checking)]]
        rows += [
            [md_text(s.server) + (f" (launch {s.launch})" if s.launch > 1 else ""), *_cells(s, checking)]
            for s in spent.servers
        ]
        header = ["Who", "Wall s", "Starting", "Measuring", "Evaluating", "Swapping", "Checking", "Idle"]
        lines += table([*(h for h in header if checking or h != "Checking"), "Measuring share"], rows)
    if effects:
        lines += [
            "Wake-up check (interleaved pairs): decode tok/s of the waves right after a wake-up over the waves that "
            "continued a visit; **flagged** when its 95% CI excludes 1.",
            "",
        ]
        rows = [
            [
                md_text(w.server),
                md_text(w.point_id),
                f"{w.woken_waves}/{w.continued_waves}",
                "—" if w.ratio is None else fixed(w.ratio, 3),
                "—" if w.ci_low is None or w.ci_high is None else f"{fixed(w.ci_low, 3)}–{fixed(w.ci_high, 3)}",
                "—" if w.flagged is None else ("**flagged**" if w.flagged else "no"),
            ]
            for w in effects
        ]
        lines += table(["Server", "Point", "Woken/continued waves", "Ratio", "95% CI", "Flag"], rows)
    return lines
