"""The headline. Report format 5 on: ``byog.report.first_screen`` (setup, warnings, what changed,
claims collapsed, accuracy in plain words). Formats 2 to 4, kept re-renderable: every claim and
every accuracy verdict with pass/fail at a glance, the speed-up range of each candidate/baseline
pair over its valid points, and how many points are invalid.

Claims are the bundle's claims.yaml plus any the re-render was given (the PR's claims file),
judged by ``byog.analysis.claims`` exactly as ``byog verify`` judges them.
"""

from __future__ import annotations

from byog.analysis import perf_equivalence
from byog.analysis.claims import evaluate_claim
from byog.analysis.numerics_headline import numerics_headline
from byog.core.safe_text import md_text
from byog.report import first_screen
from byog.report.context import ReportContext
from byog.report.format import METRICS, fixed, load_label, point_label, speedup, table, times

CLAIM_MARK = {"holds": "✅ holds", "fails": "❌ fails", "not checked": "➖ not checked"}
VERDICT_MARK = {
    "equivalent": "✅ equivalent",
    "different": "❌ different",
    "inconclusive": "❔ inconclusive",
    "degenerate": "⚠️ degenerate",
}


def _claim_rows(ctx: ReportContext) -> list[list[str]]:
    rows = []
    for claim in ctx.claims:
        outcome = evaluate_claim(ctx.summary, claim)
        rows.append(
            [
                CLAIM_MARK[outcome.outcome],
                f"claim: {md_text(outcome.label)}",
                md_text(outcome.claimed),
                md_text(outcome.got),
            ]
        )
    return rows


def _verdict_rows(ctx: ReportContext) -> list[list[str]]:
    rows = []
    for v in ctx.summary.evals.verdicts:
        spec = ", speculative" if v.speculative else ""
        within = "–" if v.within_1se is None else ("yes" if v.within_1se else "no")
        measured = (
            f"d = {fixed(v.d)} points, 90% CI [{fixed(v.ci90_low)}, {fixed(v.ci90_high)}], n = {v.n}; "
            f"|d| ≤ 1 SE: {within}" + (f"; {md_text(v.screening_label)}" if v.screening_label else "")
        )
        flipped = ctx.discordant.get((v.task, v.candidate, v.baseline)) if ctx.report_format >= 4 else None
        if flipped is not None:
            measured += f"; {flipped.flipped_line()}"
        rows.append(
            [
                VERDICT_MARK[v.verdict],
                f"accuracy: {md_text(v.task)}, {md_text(v.candidate)} vs {md_text(v.baseline)}{spec}",
                f"equivalent within ±{fixed(v.margin)}",
                measured,
            ]
        )
    return rows


def speedup_lines(ctx: ReportContext) -> list[str]:
    """Per pair: the range of the first headline metric it has, over points valid on both sides."""
    lines = []
    pairs = list(dict.fromkeys((c.candidate, c.baseline) for c in ctx.summary.bench.comparisons))
    for candidate, baseline in pairs:
        mine = [c for c in ctx.summary.bench.comparisons if (c.candidate, c.baseline) == (candidate, baseline)]
        metric = next((m for m in METRICS if any(c.metric == m for c in mine)), None)
        if metric is None:
            continue
        chosen = [c for c in mine if c.metric == metric]
        valid = [
            c for c in chosen if not ctx.is_invalid(candidate, c.point_id) and not ctx.is_invalid(baseline, c.point_id)
        ]
        label = METRICS[metric][0]
        who = f"{md_text(candidate)} / {md_text(baseline)}"
        if not valid:
            lines.append(f"- Speed-up, {who}, {label}: no point is valid on both sides.")
            continue
        ranked = sorted(valid, key=lambda c: speedup(c)[0] or 0.0)
        low, high = ranked[0], ranked[-1]
        named = point_label if ctx.report_format >= 4 else load_label  # format 4: B and ISL at both ends
        where = {c.point_id: named(ctx.points[(candidate, c.point_id)]) for c in (low, high)}
        if ctx.report_format >= 4 and low is not high and where[low.point_id] == where[high.point_id]:
            where = {c.point_id: f"{where[c.point_id]}, {md_text(c.point_id)}" for c in (low, high)}
        span = (
            f"{times(speedup(low)[0])} ({where[low.point_id]}) to {times(speedup(high)[0])} ({where[high.point_id]})"
            if low is not high
            else f"{times(speedup(low)[0])} ({where[low.point_id]})"
        )
        clear = sum(1 for c in valid if c.within_noise is False)
        skipped = len(chosen) - len(valid)
        tail = f"; {skipped} invalid point(s) left out" if skipped else ""
        lines.append(
            f"- Speed-up, {who}, {label}: {span} over {len(valid)} valid point(s); "
            f"the 95% CI excludes 1 at {clear} of them{tail}."
        )
        lines += [f"  - {md_text(note)}" for note in perf_equivalence.ci_notes(chosen)]  # what the CIs leave out
    return lines


def _numerics_lines(ctx: ReportContext) -> list[str]:
    """Per pair: the token-level differential's verdict and what its control showed (format 3 on;
    docs/numerics.md)."""
    numerics = ctx.summary.numerics
    if numerics is None:
        return []
    sensitivity = {s.baseline: s for s in numerics.sensitivity}
    return [
        f"- Numerics, {md_text(c.candidate)} / {md_text(c.baseline)}: "
        f"{md_text(numerics_headline(c, sensitivity.get(c.baseline)))}."
        for c in numerics.comparisons
    ]


def _invalid_line(ctx: ReportContext) -> list[str]:
    invalid = ctx.invalid
    if not invalid:
        return [f"- All {len(ctx.summary.bench.points)} bench points are valid."] if ctx.summary.bench.points else []
    names = ", ".join(f"{md_text(p.server)} {load_label(p)}" for p in invalid[:6]) + (", …" if len(invalid) > 6 else "")
    return [
        f"- ⚠ {len(invalid)} of {len(ctx.summary.bench.points)} bench points are invalid ({names}): their numbers are "
        "struck through below and are not results (see Invalid points)."
    ]


def section(ctx: ReportContext) -> list[str]:
    if ctx.report_format >= 5:
        return first_screen.headline(ctx, _numerics_lines(ctx))
    rows = _claim_rows(ctx) + _verdict_rows(ctx)
    lines = ["## Headline", ""]
    if rows:
        lines += table(["", "Claim or verdict", "Stated", "Measured"], rows)
    else:
        lines += ["No claims and no accuracy verdicts in this bundle.", ""]
    bullets = speedup_lines(ctx) + (_numerics_lines(ctx) if ctx.report_format >= 3 else []) + _invalid_line(ctx)
    if bullets:
        lines += [*bullets, ""]
    return lines
