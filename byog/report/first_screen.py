"""The headline of report format 5, the first screen a maintainer decides on, in this order:
setup per pair, warnings that void or limit the claim, what changed (regressions first), claims
collapsed to a count with only those that fail or were not checked listed, accuracy in plain words.

Claims are judged by ``byog.analysis.claims`` exactly as ``byog verify`` judges them. One CI level
throughout: accuracy verdicts are TOSTs at 90% (``EVAL_CI``), and that is the level named.
"""

from __future__ import annotations

from byog.analysis.claims import claim_label, evaluate_claim, measured
from byog.core.errors import CheckFailed
from byog.core.safe_text import md_text
from byog.report.changes import change_lines
from byog.report.context import ReportContext
from byog.report.format import fixed, num, table
from byog.report.isolation import isolation_lines, merge_base_lines
from byog.report.setup import setup_lines, warning_lines
from byog.schemas.claims import Claim, VerdictClaim
from byog.schemas.evals import EvalVerdict
from byog.schemas.summary import Summary

EVAL_CI = "90%"  # the accuracy verdict's TOST level: its CI, table and wording name this one level
SMALL_DELTA = 0.001  # a relative difference below 0.1% reads "Δ < 0.1%"
CLAIM_MARK = {"holds": "✅ holds", "fails": "❌ fails", "not checked": "➖ not checked"}


def unit(metric: str) -> tuple[str, float]:
    """(unit, scale) a claim's metric is shown in: seconds as ms, token rates as tok/s."""
    if "tok_s" in metric:
        return "tok/s", 1.0
    if metric.endswith("_s") or "_s." in metric:
        return "ms", 1e3
    return "", 1.0


def _value(value: float, metric: str, ratio: bool) -> str:
    if ratio:
        return f"{num(value)}×"
    name, scale = unit(metric)
    return f"{num(value * scale)} {name}".rstrip()


def _delta(got: float, claimed: float) -> str:
    if not claimed:
        return ""
    off = got / claimed - 1
    return "Δ < 0.1%" if abs(off) < SMALL_DELTA else f"Δ {off:+.1%}"


def _claim_row(summary: Summary, claim: Claim, outcome: str, got_text: str) -> list[str]:
    label = f"{md_text(claim_label(claim))}"
    if isinstance(claim, VerdictClaim):
        return [CLAIM_MARK[outcome], label, md_text(claim.verdict), md_text(got_text)]
    ratio = claim.kind == "ratio"
    stated = f"{_value(claim.value, claim.metric, ratio)} (±{claim.tolerance:.0%})"
    try:
        got = measured(summary, claim)
    except CheckFailed:
        return [CLAIM_MARK[outcome], label, stated, md_text(got_text)]
    return [CLAIM_MARK[outcome], label, stated, f"{_value(got, claim.metric, ratio)} ({_delta(got, claim.value)})"]


def _tolerances(claims: list[Claim]) -> str:
    found = sorted({c.tolerance for c in claims if not isinstance(c, VerdictClaim)})
    if not found:
        return ""
    return f" (±{found[0]:.0%})" if len(found) == 1 else f" (±{found[0]:.0%} to ±{found[-1]:.0%})"


def claim_lines(ctx: ReportContext) -> list[str]:
    claims = ctx.claims
    if not claims:
        return []
    judged = [(claim, evaluate_claim(ctx.summary, claim)) for claim in claims]
    held = [claim for claim, outcome in judged if outcome.outcome == "holds"]
    mark = "✅" if len(held) == len(claims) else "❌"
    lines = [f"{mark} {len(held)} of {len(claims)} claims hold{_tolerances(held)}.", ""]
    rest = [
        _claim_row(ctx.summary, claim, outcome.outcome, outcome.got)
        for claim, outcome in judged
        if outcome.outcome != "holds"
    ]
    return lines + table(["", "Claim", "Stated", "Measured"], rest)


def _scores(ctx: ReportContext, v: EvalVerdict) -> dict[str, str]:
    """Per server: its score on the task in words, '16.7% of 6 items'."""
    return {
        s.server: f"{fixed(s.score, 1)}% of {_items(s.n_items)}"
        for s in ctx.summary.evals.scores
        if s.task == v.task and s.score is not None
    }


def _items(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def _accuracy_line(ctx: ReportContext, v: EvalVerdict) -> str:
    task = md_text(v.task)
    who = f"{md_text(v.candidate)} vs {md_text(v.baseline)}" + (", speculative" if v.speculative else "")
    scores = _scores(ctx, v)
    a, b = scores.get(v.candidate), scores.get(v.baseline)
    scored = f"the candidate scores {a}, the baseline {b}" if a is not None and b is not None else ""
    if a is not None and a == b:
        scored = f"both score {a}"
    if v.degenerate:
        why = "; ".join(md_text(w) for w in v.degenerate_why) or ", ".join(v.degenerate)
        return f"- ⚠ {task} ({who}) tells nothing: {scored or 'no scores'} ({why})."
    flipped = ctx.discordant.get((v.task, v.candidate, v.baseline))
    items = f"; {_items(flipped.lost)} the candidate lost, {flipped.won} it gained" if flipped is not None else ""
    mark = {"equivalent": "✅", "different": "❌", "inconclusive": "❔"}.get(v.verdict, "⚠")
    screening = "; a screening result (the design cannot keep the gate sound), never a pass" if v.screening else ""
    return (
        f"- {mark} {task} ({who}): {v.verdict} within ±{fixed(v.margin)} percentage points; "
        f"d = {fixed(v.d)} percentage points (candidate − baseline), {EVAL_CI} CI [{fixed(v.ci90_low)}, "
        f"{fixed(v.ci90_high)}], {_items(v.n)}; {scored}{items}{screening}."
    )


def accuracy_lines(ctx: ReportContext) -> list[str]:
    verdicts = ctx.summary.evals.verdicts
    if not verdicts:
        return []
    return ["**Accuracy**:", "", *(_accuracy_line(ctx, v) for v in verdicts), ""]


def headline(ctx: ReportContext, numerics: list[str]) -> list[str]:
    """The section; ``numerics``: the token-level differential's lines, shown after what changed."""
    lines = ["## Headline", "", *setup_lines(ctx), *merge_base_lines(ctx), ""]
    warnings = warning_lines(ctx)
    if warnings:
        lines += ["**Warnings**, each voids or limits what the numbers claim:", "", *warnings, ""]
    lines += change_lines(ctx)
    lines += isolation_lines(ctx)
    lines += [*numerics, ""] if numerics else []
    claims = claim_lines(ctx)
    lines += claims
    lines += accuracy_lines(ctx)
    if len(lines) == 3 and not claims:
        lines += ["No claims, no comparisons and no accuracy verdicts in this bundle.", ""]
    return lines
