"""Accuracy: each eval's score per server, then the paired verdict per (task, candidate/baseline),
then (report format 4 on) the items each pair scored differently, folded (``byog.analysis.discordant``),
and, where items.parquet keeps raw outputs (item schema 2), each eval's ``[invalid]`` answers: what the
extraction expected and a few raw outputs, folded (``byog.analysis.invalid_answers``)."""

from __future__ import annotations

from byog.analysis import discordant
from byog.analysis.invalid_answers import InvalidAnswers, with_invalid_answers
from byog.core.safe_text import md_fence_lines, md_text
from byog.report.context import ReportContext
from byog.report.format import fixed, num, table
from byog.report.sections.headline import VERDICT_MARK
from byog.schemas.evals import EvalVerdict, SequentialRecord, StrataRecord, StratumVerdict, clip

SHOWN_ITEMS = 50  # flipped items listed per pair; `byog items` prints them all
SHOWN_RAW = 3  # raw outputs of [invalid] answers shown per server and task
SHOWN_RAW_CHARS = 600  # of each (items.parquet keeps up to RAW_OUTPUT_CHARS; `byog items` shows that)
SERVER_BATCH_FORMAT = 9  # the first report format whose strata line says the batch each server measured


def section(ctx: ReportContext) -> list[str]:
    evals = ctx.summary.evals
    lines = ["## Accuracy", ""]
    if not evals.scores and not evals.verdicts:
        return [*lines, "No evals ran.", ""]
    verdicts = [_verdict_row(v) for v in evals.verdicts]
    notes = [note for v in evals.verdicts for note in _verdict_notes(v, ctx.report_format)]
    if verdicts:
        lines += [
            "Paired per item, in score points: d = mean(candidate − baseline); **equivalent** when the 90% CI lies "
            "inside ±margin (TOST, α = 0.05), **different** when the 95% CI excludes 0 and |d| > margin. "
            "Power and MDE (minimum detectable effect) say how much the sample can tell. |d| ≤ 1 SE is the "
            'looser rule "within a standard error of stock" (docs/statistics.md says what a disagreement means).',
            "",
        ]
        lines += table(
            ["Task", "Servers", "Spec", "n", "d", "SE", "90% CI", "Margin", "Verdict", "|d| ≤ 1 SE", "Power", "MDE"],
            verdicts,
        )
        if notes:
            lines += [*notes, ""]
        if ctx.report_format >= 4:
            lines += _flipped(ctx)
    scores = [
        [
            md_text(s.server),
            md_text(s.task),
            num(s.n_items),
            num(s.passes),
            fixed(s.score),
            fixed(s.stderr),
            md_text(s.data or "–"),
        ]
        for s in evals.scores
    ]
    lines += table(["Server", "Task", "Items", "Passes", "Score", "SE", "Data"], scores)
    return lines + _invalid(ctx)


def _verdict_row(v: EvalVerdict) -> list[str]:
    within = "–" if v.within_1se is None else ("yes" if v.within_1se else "no")
    return [
        md_text(v.task),
        f"{md_text(v.candidate)} vs {md_text(v.baseline)}",
        "on" if v.speculative else "off",
        num(v.n),
        fixed(v.d),
        fixed(v.se_d),
        f"[{fixed(v.ci90_low)}, {fixed(v.ci90_high)}]",
        f"±{fixed(v.margin)}",
        VERDICT_MARK[v.verdict] + (f" ({md_text(v.screening_label or 'screening')})" if v.screening else ""),
        within,
        fixed(v.power),
        fixed(v.mde),
    ]


def _verdict_notes(v: EvalVerdict, report_format: int) -> list[str]:
    """The lines under the verdict table about one verdict: degeneracy, observed discordance, the
    method, the sequential looks and a screening design's predicted false-fail rate."""
    where = f"{md_text(v.task)}, {md_text(v.candidate)} vs {md_text(v.baseline)}"
    notes = [
        f"- {where}: degenerate ({md_text(reason)}): {md_text(why)}."
        for reason, why in zip(v.degenerate, v.degenerate_why, strict=True)
    ]
    if v.observed_redraw is not None:
        sound = "sound" if v.observed_sound else "unsound"
        needed = f"{v.sound_n:,}" if v.sound_n else "more than 20,000"
        notes.append(
            f"- {where}: observed discordance {num(v.discordant)} of {num(v.n)} items "
            f"({fixed(100 * (v.observed_discordance or 0), 1)}%), implying a re-draw rate of "
            f"{fixed(100 * v.observed_redraw, 0)}% (planned {fixed(100 * (v.planned_redraw or 0), 0)}%); "
            "at that rate "
            f"this design fails identical servers {fixed(100 * (v.observed_false_fail or 0), 1)}% of the time and "
            f"flags one margin worse {fixed(100 * (v.observed_power or 0), 0)}%: {sound}; sound from n = {needed}."
        )
    if v.method == "tango-score":
        notes.append(
            f"- {where}: right-or-wrong items, so the CIs and the verdict are Tango's score interval for paired "
            f"proportions ({num(v.discordant)} discordant items), not the paired t (docs/statistics.md §1)."
        )
    if v.sequential is not None:
        notes.append(f"- {where}: {_looks_line(v.sequential)}")
    if v.strata is not None:
        notes.append(f"- {where}: {_strata_line(v.strata, report_format)}")
    if v.screening and v.planned_false_fail is not None and v.planned_false_fail > 0.05:
        notes.append(
            f"- {where}: screening, not a pass: the plan's items and passes at ±{fixed(v.margin)} fail "
            f"identical servers {fixed(100 * (v.planned_false_fail or 0), 0)}% of the time (predicted before "
            "the run; a sound design keeps that at 5% or less)."
        )
    return notes


def _invalid(ctx: ReportContext) -> list[str]:
    """Per (server, task) with [invalid] answers: the count, what the extraction expected, then up to
    SHOWN_RAW raw outputs folded. Only files of item schema 2 are read (older ones keep no raw output),
    so an older bundle's report is unchanged."""
    found = with_invalid_answers(ctx.run_dir, [(s.server, s.task) for s in ctx.summary.evals.scores])
    if not found:
        return []
    lines = [
        "Answers the task's extraction could not read (`[invalid]`: it found no answer in the response, "
        "so the item scores 0 on that pass):",
        "",
    ]
    for seen in found:
        lines += _invalid_block(seen)
    return lines


def _invalid_block(seen: InvalidAnswers) -> list[str]:
    n = len(seen.answers)
    rule = f"the extraction expected {md_text(seen.extraction)}" if seen.extraction else "its rule is not recorded"
    if seen.gated:
        kept = " Gated data: no raw output is kept."
    elif not seen.kept:
        kept = " No raw output is kept."
    else:
        kept = ""
    where = f"{md_text(seen.task)} on {md_text(seen.server)}"
    lines = [f"- {where}: {num(n)} of {num(seen.rows)} answers `[invalid]`; {rule}.{kept}", ""]
    shown = seen.kept[:SHOWN_RAW]
    if not shown:
        return lines
    lines += [f"<details><summary>Raw output of {len(shown)} of {n} [invalid] answers</summary>", ""]
    for answer in shown:
        assert answer.text is not None
        length = f"{answer.chars:,} characters" if answer.chars is not None else "length not recorded"
        lines += [f"Item {md_text(answer.item_id)}, pass {answer.pass_index} ({length}):", ""]
        lines += md_fence_lines(clip(answer.text, SHOWN_RAW_CHARS), "text")
    return [*lines, "</details>", ""]


def _looks_line(record: SequentialRecord) -> str:
    """The group-sequential design's looks, as one note (docs/statistics.md §1a)."""
    zero = "McNemar |z|" if record.method == "tango-score" else "|d|/SE"
    looks = "; ".join(
        f"{num(lk.items)} items: {lk.decision} "
        f"(TOST {fixed(min(lk.z_lower, lk.z_upper))} vs {fixed(lk.equivalence_bound)}, "
        f"{zero} {fixed(abs(lk.z_zero))} vs {fixed(lk.difference_bound)})"
        for lk in record.looks
    )
    return (
        f"group-sequential ({md_text(record.spending)} spending, "
        f"{'Tango score statistic, ' if record.method == 'tango-score' else ''}looks at "
        f"{', '.join(fixed(t, 2) for t in record.fractions)}): {record.decision} at {num(record.items_used)} of "
        f"{num(record.items_planned)} items; {looks}."
    )


def _strata_line(record: StrataRecord, report_format: int) -> str:
    """Each operating point's paired verdict and whether the difference depends on it (docs/statistics.md §1b);
    from ``SERVER_BATCH_FORMAT`` on, with the batch each server's counters measured over the stratum."""
    batch = report_format >= SERVER_BATCH_FORMAT
    strata = "; ".join(
        f"{num(s.operating_point)}: {s.verdict}, d {fixed(s.d)}, 90% CI [{fixed(s.ci90_low)}, {fixed(s.ci90_high)}], "
        f"{num(s.n)} items" + (f", server batch {_batch(s)}" if batch else "")
        for s in record.strata
    )
    contrasts = "; ".join(
        f"{num(c.operating_point)} vs {num(c.reference)}: Δd {fixed(c.delta)}, 95% CI [{fixed(c.ci95_low)}, "
        f"{fixed(c.ci95_high)}], {c.verdict}"
        for c in record.contrasts
    )
    measured = (
        "; server batch: candidate / baseline output tokens per engine step, from their counters" if batch else ""
    )
    return (
        f"per operating point (requests in flight, which bound the server's batch{measured}): {strata}; "
        f"{contrasts}; accuracy depends on the batch: {record.depends}."
    )


def _batch(stratum: StratumVerdict) -> str:
    """Both servers' output tokens per engine step over the stratum; "unknown" where one recorded none."""
    sides = (stratum.candidate_tokens_per_step, stratum.baseline_tokens_per_step)
    if all(side is None for side in sides):
        return "unknown"
    return " / ".join("unknown" if side is None else fixed(side, 1) for side in sides)


def _flipped(ctx: ReportContext) -> list[str]:
    """Per (task, pair) with discordant items: a line naming them, then the items folded. The
    <summary> holds only numbers and fixed words (it is raw HTML, where markdown escapes do not apply)."""
    lines: list[str] = []
    for (task, candidate, baseline), found in ctx.discordant.items():
        if not found.items:
            continue
        gated = " Gated data: ids, hashes and scores only." if found.gated else ""
        lines += [
            f"Items that flipped, {md_text(task)}, {md_text(candidate)} vs {md_text(baseline)} "
            f"(of {num(found.n)} paired; scores in points, ✓→✗: the candidate lost an item the baseline "
            f"scored higher).{gated}",
            "",
            f"<details><summary>{found.flipped_line()}</summary>",
            "",
        ]
        shown = found.items[:SHOWN_ITEMS]
        lines += table(
            discordant.columns(found.gated), [[md_text(c) for c in discordant.cells(i, found.gated)] for i in shown]
        )
        if len(found.items) > len(shown):
            lines += [f"… and {len(found.items) - len(shown)} more: `byog items` lists them all.", ""]
        lines += ["</details>", ""]
    return lines
