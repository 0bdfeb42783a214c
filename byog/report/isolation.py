"""Where the baseline stands relative to the PR, on the first screen: how far it is from the PR's merge base
(recorded where the run ran: ``byog.pipeline.baseline_distance``), said when it is not the merge base
itself; and the isolation pair's line: a PR behind a switch must change nothing when the switch is off.
Per isolation pair (``ComparisonPair.isolation``: stock at the merge base vs the PR with its switch
off) it reads the verdicts the summary already holds and names each that moved: a perf point whose CI
leaves 1 (or is labelled faster or slower), a numerics verdict other than "numerically equivalent" (the
greedy outputs against the A/A envelope), an accuracy verdict "different"; else "no measurable change".
What the run did not measure is said, never read as no change.
"""

from __future__ import annotations

from byog.core.safe_text import md_text
from byog.report.context import ReportContext
from byog.report.format import server_records

MOVED_LABELS = ("faster", "slower")


def _pair_changes(ctx: ReportContext, candidate: str, baseline: str) -> tuple[list[str], list[str]]:
    """(what changed, what was not measured) between the pair's servers."""
    summary = ctx.summary
    changed: list[str] = []
    missing: list[str] = []
    comparisons = [c for c in summary.bench.comparisons if (c.candidate, c.baseline) == (candidate, baseline)]
    moved = [c for c in comparisons if c.label in MOVED_LABELS or (c.label is None and c.within_noise is False)]
    if moved:
        changed += [f"{md_text(c.metric)} at {md_text(c.point_id)} {c.ratio:.3f}×" for c in moved]
    elif not comparisons:
        missing.append("performance")
    numerics = [
        n
        for n in (summary.numerics.comparisons if summary.numerics else [])
        if (n.candidate, n.baseline) == (candidate, baseline)
    ]
    changed += [f"greedy outputs: {md_text(n.verdict)}" for n in numerics if n.verdict != "numerically equivalent"]
    if not numerics:
        missing.append("greedy outputs (numerics)")
    verdicts = [v for v in summary.evals.verdicts if (v.candidate, v.baseline) == (candidate, baseline)]
    changed += [f"{md_text(v.task)} accuracy: different" for v in verdicts if v.verdict == "different"]
    return changed, missing


def merge_base_lines(ctx: ReportContext) -> list[str]:
    """'⚠ candidate vs baseline: baseline vllm 0.32.0 is 412 commits behind the merge base ...', where the
    baseline is not the candidate's merge base (or that is unknown); nothing where the run recorded none."""
    lines = []
    for record in server_records(ctx.run_dir):
        for d in record.baseline_distance:
            if d.line.startswith("baseline = merge base"):
                continue
            lines.append(f"- ⚠ {md_text(record.name)} vs {md_text(d.baseline)}: {md_text(d.line)}.")
    return lines


def isolation_lines(ctx: ReportContext) -> list[str]:
    """'switch off: no measurable change (...)' or what changed, one line per isolation pair."""
    plan = ctx.plan
    lines: list[str] = []
    for pair in plan.comparison_pairs if plan is not None else []:
        if not pair.isolation:
            continue
        who = f"{md_text(pair.candidate)} vs {md_text(pair.baseline)}"
        changed, missing = _pair_changes(ctx, pair.candidate, pair.baseline)
        unmeasured = f"; not measured: {', '.join(missing)}" if missing else ""
        if changed:
            lines.append(f"- ❌ switch off: changed ({who}): {'; '.join(changed)}{unmeasured}.")
        else:
            lines.append(f"- ✅ switch off: no measurable change ({who}){unmeasured}.")
    return ["**Isolation**:", "", *lines, ""] if lines else []
