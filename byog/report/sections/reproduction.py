"""Reproductions: which points (and eval items) a maintainer re-ran, by whom, on what, and whether
they agreed (the rule: ``byog.analysis.reproduction``).

Two cases, one table shape: the bundle is itself a reproduction (its reproduction.json says of
which bundle), or reproductions of this bundle were given to the re-render (``byog report
BUNDLE`` finds ``<bundle>.reproduction*.tar.gz`` beside it). Nothing is written when neither.
"""

from __future__ import annotations

import math

from byog.core.safe_text import md_code, md_text
from byog.report.context import ReportContext, ReproductionView
from byog.report.format import METRICS, fixed, num, scaled, table
from byog.schemas.reproduction import MetricCheck, ReproductionRecord

MARK = {"reproduced": "✅ reproduced", "not reproduced": "❌ not reproduced", "not compared": "➖ not compared"}


def _scale(metric: str) -> float:
    return METRICS.get(metric, (metric, 1.0, True))[1]


def _value(value: float | None, low: float | None, high: float | None, metric: str, ratio: bool) -> str:
    if ratio:  # candidate / baseline as measured (not oriented as a speed-up)
        text = f"{fixed(value, 3)}×" if value is not None else "–"
        return text + (f" [{fixed(low, 3)}, {fixed(high, 3)}]" if low is not None and high is not None else "")
    scale = _scale(metric)
    text = num(scaled(value, scale))
    if low is not None and high is not None:
        text += f" [{num(scaled(low, scale))}, {num(scaled(high, scale))}]"
    return text


def _percent(log_value: float | None, signed: bool) -> str:
    if log_value is None:
        return "–"
    pct = (math.exp(log_value) - 1) * 100
    return f"{pct:+.1f}%" if signed else f"±{pct:.1f}%"


def _check_row(check: MetricCheck) -> list[str]:
    ratio = check.kind == "ratio"
    label = METRICS.get(check.metric, (check.metric,))[0]
    who = f"{md_text(check.server)} / {md_text(check.baseline)}" if ratio else md_text(check.server)
    return [
        md_text(check.point_id),
        who,
        label.split(" (")[0] + " ratio" if ratio else label,
        _value(check.original, check.original_low, check.original_high, check.metric, ratio),
        _value(check.reproduced, check.reproduced_low, check.reproduced_high, check.metric, ratio),
        _percent(check.deviation, True),
        _percent(check.tolerance, False),
        MARK[check.outcome] + (f": {md_text(check.note)}" if check.note else ""),
    ]


def _tables(record: ReproductionRecord) -> list[str]:
    rows = [_check_row(check) for point in record.points for check in point.checks]
    lines = table(
        ["Point", "Server", "Metric", "Original [95% CI]", "Reproduced [95% CI]", "Deviation", "Tolerance", "Outcome"],
        rows,
    )
    evals = [
        [
            md_text(e.task),
            md_text(e.server),
            num(e.items),
            num(e.agreed),
            fixed(e.agreement),
            f"≥ {fixed(e.min_agreement)}",
            MARK[e.outcome] + (f": {md_text(e.note)}" if e.note else ""),
        ]
        for e in record.evals
    ]
    lines += table(["Eval", "Server", "Items", "Same answer", "Agreement", "Needed", "Outcome"], evals)
    numerics = [
        [
            md_text(f"{n.candidate} vs {n.baseline}"),
            md_text(n.original or "–"),
            md_text(n.reproduced),
            MARK[n.outcome] + (f": {md_text(n.note)}" if n.note else ""),
        ]
        for n in record.numerics
    ]
    # only where there is one: a reproduction without numerics renders as it always did (verify re-renders it)
    if numerics:
        lines += table(["Numerics", "Original verdict", "Reproduced verdict", "Outcome"], numerics)
        lines += [
            "A numerics comparison reproduces when its verdict is the original's; 'insensitive' is not compared.",
            "",
        ]
    rule = record.rule
    lines += [
        "Rule: a value is reproduced when |ln(reproduced / original)| ≤ √(w_o² + w_r²) + ln(1 + "
        f"{fixed(rule.run_noise)}), "
        f"w = half the width of each side's {rule.ci_level:.0%} bootstrap CI in log units and {rule.run_noise:.0%} the "
        "between-run noise allowed (a ratio: that allowance × √2); eval items agree when the extracted answers are "
        "equal "
        "under greedy decoding.",
        "",
    ]
    return lines


def _who(view: ReproductionView) -> str:
    if view.principal:
        return f"{md_text(view.principal)} (key {md_code(view.signer_fingerprint)}, signature verified)"
    if view.signer_fingerprint:
        return f"key {md_code(view.signer_fingerprint)} (signature not checked against allowed signers)"
    return "an unsigned reproduction"


def _servers(view: ReproductionView) -> str:
    parts = []
    for record in view.servers:
        digests = record.repo_digests or record.image_digests
        image = digests[0] if digests else record.image
        where = md_code(image) if image else md_text(record.runtime or "?")
        parts.append(f"{md_text(record.name)} ({where})")
    return ", ".join(parts) or "–"


def _summary_line(view: ReproductionView) -> str:
    r = view.record
    points = ", ".join(f"{md_text(p.point_id)} ({p.load})" for p in r.points) or "no points"
    same = (
        "the same kind as the original's"
        if r.hardware.same
        else f"not the original's ({md_text(r.hardware.original)}): absolute numbers are not compared, ratios are"
    )
    return (
        f"{MARK[r.outcome]} by {_who(view)}, {md_text(r.finished_at)}, on {md_text(r.hardware.reproduced)} "
        f"({same}); servers {_servers(view)}; points {points}."
    )


def section(ctx: ReportContext) -> list[str]:
    lines: list[str] = []
    own = ctx.own_reproduction
    if own is not None:
        o = own.record.original
        signer = (
            f"signed by {md_text(o.signer_principal or o.signer_fingerprint)}"
            if (o.signer_principal or o.signer_fingerprint)
            else "unsigned"
        )
        lines += [
            "## Reproduction",
            "",
            f"This bundle re-runs part of bundle {md_code(o.bundle_sha256[:16])} (plan {md_text(o.plan_name)}, byog "
            f"{md_text(o.byog_version)}, {signer}).",
            "",
            _summary_line(own),
            "",
            *_tables(own.record),
        ]
    if ctx.inputs.reproductions:
        lines += ["## Reproductions", ""]
        for view in ctx.inputs.reproductions:
            lines += [_summary_line(view), "", *_tables(view.record)]
    return lines
