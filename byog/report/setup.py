"""The first screen's setup and warnings (report format 5): what each pair ran on, and every
condition that voids or limits what its numbers claim, each one sentence with its consequence.

Read from the run directory's own records: env.json (hardware), servers/*/server.json (argv, the
identity read where the server ran), plan.yaml (a baseline declared not stock) and the summary
(invalid points, wake-up checks, evals). What a record does not say is "not recorded", never a
guess. Every bundle string goes through ``md_text`` / ``md_code`` here, where it enters the markdown.
Which warnings there are is decided once, by ``byog.analysis.caveats``; here each is worded, and the
attestations (``byog.bundles.attestations``) read the same ``warnings``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from byog.analysis.caveats import (
    SYNTHETIC,
    Caveat,
    baseline_not_stock,
    caveats,
    compared_pairs,
    is_dummy,
)
from byog.analysis.hardware import describe
from byog.analysis.pair_diff import compare_pair, pair_line
from byog.core.safe_text import md_code, md_text
from byog.report.context import ReportContext
from byog.report.format import load_label
from byog.schemas.bench import PointSummary
from byog.schemas.env import EnvRecord
from byog.schemas.plan import ComparisonPair
from byog.schemas.server import ServerRecord

# what an invalid point's first reason calls for: (words in the reason, the remedy)
REMEDIES: tuple[tuple[str, str], ...] = (
    ("client saturated", "run the bench client on an idle machine or more cores, or at a lower load"),
    ("preempted", "give the KV cache more memory (--gpu-memory-utilization) or lower the load"),
    ("requests failed", "read the server log for the failed requests' error and fix it"),
    ("n_out != ", "make the server honour max_tokens and ignore_eos (no stop tokens, no max-model-len cut)"),
    ("prefix cache hit", "disable prefix caching or use prompts that share no prefix"),
    ("usage on every chunk", "use a vLLM that reports usage per streamed chunk"),
)
REMEDY_ELSE = "re-run the point"


def pairs(ctx: ReportContext) -> list[tuple[str, str]]:
    """Every candidate/baseline pair the bundle compares (bench, then evals), in order."""
    return compared_pairs(ctx.summary)


def _record(ctx: ReportContext, name: str) -> ServerRecord | None:
    return next((r for r in ctx.servers if r.name == name), None)


def _weights(record: ServerRecord | None) -> str:
    if record is None:
        return "weights not recorded"
    if is_dummy(record):
        return "⚠ dummy weights (`--load-format dummy`)"
    files = record.identity.weights if record.identity is not None else None
    if files is not None and files.weights_sha256:
        return f"real weights, sha256 {md_code(files.weights_sha256[:12])}"
    if files is not None and files.hub_id:
        return "weights " + md_code(f"{files.hub_id}@{files.revision or 'unresolved'}")
    return "weights not recorded"


def _vllm(record: ServerRecord | None) -> str:
    """'vLLM 0.24.0, commit 1a2b3c4d5e6f', 'vLLM 0.24.0, released build' or what is not recorded."""
    vllm = record.identity.vllm if record is not None and record.identity is not None else None
    if vllm is not None and vllm.version and not vllm.error:
        build = f"commit {md_code(vllm.commit[:12])}" if vllm.commit else "released build"
        return f"{md_text(vllm.distribution or 'vLLM')} {md_text(vllm.version)}, {build}"
    served = record.version if record is not None else None
    version = served.get("version") if isinstance(served, dict) else served
    return f"vLLM {md_text(str(version))}, commit not recorded" if version else "vLLM version not recorded"


def _stock(ctx: ReportContext, candidate: str, baseline: str) -> str:
    """What the plan declares of the baseline (verify's ``--policy`` stock check holds it to that)."""
    return "⚠ baseline not stock" if baseline_not_stock(ctx.plan, candidate, baseline) else "baseline declared stock"


PAIR_LINE_FORMAT = 6  # the first report format whose setup line says what the pair differs in


def _differs(ctx: ReportContext, candidate: str, baseline: str) -> str:
    """verify's pair line (``byog.analysis.pair_diff.pair_line``): what vLLM resolved differently, asked or not."""
    a, b = _record(ctx, candidate), _record(ctx, baseline)
    if a is None or b is None:
        return " What the pair differs in: not recorded."
    declared = ctx.plan.comparison_pairs if ctx.plan is not None else []
    pair = next(
        (p for p in declared if (p.candidate, p.baseline) == (candidate, baseline)),
        ComparisonPair(candidate=candidate, baseline=baseline),
    )
    line = pair_line(pair, compare_pair((candidate, baseline), (a, b), ctx.env or EnvRecord()))
    return f" {md_text(line)}."


def setup_lines(ctx: ReportContext) -> list[str]:
    """One line per pair: hardware, weights, each side's vLLM build, whether the baseline is stock, and
    (format 6 on) what the pair differs in."""
    hardware = md_text(describe(ctx.env)) if ctx.env is not None else "hardware not recorded"
    lines = []
    for candidate, baseline in pairs(ctx):
        a, b = _record(ctx, candidate), _record(ctx, baseline)
        weights = _weights(a) if _weights(a) == _weights(b) else f"candidate {_weights(a)}, baseline {_weights(b)}"
        differs = _differs(ctx, candidate, baseline) if ctx.report_format >= PAIR_LINE_FORMAT else ""
        lines.append(
            f"- **{md_text(candidate)} vs {md_text(baseline)}**: {hardware}; {weights}; "
            f"candidate {_vllm(a)}; baseline {_vllm(b)}; {_stock(ctx, candidate, baseline)}.{differs}"
        )
    return lines + _method_lines(ctx)


METHOD_FORMAT = 8  # the first report format that names the method of a sequential pair too


def _sequential_lines(ctx: ReportContext) -> list[str]:
    """A benched pair the plan does not interleave: each server measured in a block of its own."""
    plan = ctx.plan
    if plan is None or ctx.report_format < METHOD_FORMAT:
        return []
    interleaved = {*plan.interleaved_pairs, *((w.candidate, w.baseline) for w in ctx.summary.bench.wake_integrity)}
    benched = dict.fromkeys((c.candidate, c.baseline) for c in ctx.summary.bench.comparisons)
    return [
        f"- Method, {md_text(c)} vs {md_text(b)}: **sequential**: each server measured in a block of its own, "
        "the plan's default (`interleave: false`; docs/interleave.md says why interleaving is not the default)."
        for c, b in benched
        if (c, b) not in interleaved
    ]


def _method_lines(ctx: ReportContext) -> list[str]:
    """Each benched pair's method: sequential, or interleaved as its wake checks decided it
    (byog.analysis.wake.integrity)."""
    lines = _sequential_lines(ctx)
    for w in ctx.summary.bench.wake_integrity:
        launch = f" (launch {w.launch})" if w.launch > 1 else ""
        dlogprob = "" if w.max_abs_dlogprob is None else f", max |Δlogprob| {w.max_abs_dlogprob:.2g} at B=1"
        effect = _wake_effect(ctx, (w.candidate, w.baseline)) if ctx.report_format >= PAIR_LINE_FORMAT else ""
        lines.append(
            f"- Method, {md_text(w.candidate)} vs {md_text(w.baseline)}{launch}: **{w.method}**: {md_text(w.why)} "
            f"({w.wakes_matched} of {w.wakes_checked} wake checks matched{dlogprob}; figures: summary.json "
            f"bench.wake_integrity, and the wake-up check under Time to verdict).{effect}"
        )
    return lines


def _wake_effect(ctx: ReportContext, servers: tuple[str, str]) -> str:
    """The pair's measured wake effect per side (summary bench.wake_effects): decode tok/s of the waves
    right after a wake over the side's continued waves, per point; a flagged one is named with its CI."""
    effects = [w for w in ctx.summary.bench.wake_effects if w.server in servers and w.ratio is not None]
    if not effects:
        return ""
    sides = "; ".join(
        f"{md_text(name)} " + ", ".join(f"{w.ratio:.2f}" for w in effects if w.server == name)
        for name in servers
        if any(w.server == name for w in effects)
    )
    flagged = [
        f"{md_text(w.server)} at {md_text(w.point_id)} {w.ratio:.3f} (95% CI {w.ci_low:.3f}–{w.ci_high:.3f})"
        for w in effects
        if w.flagged and w.ratio is not None and w.ci_low is not None and w.ci_high is not None
    ]
    verdict = (
        f"⚠ flagged: {', '.join(flagged)}; that ratio carries the wake-up, raise the pair's `wake_warmup_waves`"
        if flagged
        else "none flagged"
    )
    return f" Wake effect (first wave after a wake / continued waves, decode tok/s, per point): {sides}; {verdict}."


def _remedy(reason: str) -> str:
    return next((remedy for words, remedy in REMEDIES if words in reason), REMEDY_ELSE)


def _invalid_line(p: PointSummary) -> str:
    reason = p.invalid_reasons[0] if p.invalid_reasons else "no reason recorded"
    return (
        f"- ⚠ Invalid point, {md_text(p.server)} {_where(p)}: {md_text(reason, 200)}. Its numbers are not "
        f"results; remedy: {_remedy(reason)}."
    )


def _one_side_line(ctx: ReportContext, candidate: str, baseline: str, one_side: tuple[tuple[str, str], ...]) -> str:
    named = ", ".join(f"{_where(ctx.points[(side, pid)])} ({md_text(side)} only)" for pid, side in one_side)
    return (
        f"- ⚠ Invalid on one side only, {md_text(candidate)} vs {md_text(baseline)}: {named}: the other "
        "side's valid number there has nothing to be compared with, so no speed-up is given there."
    )


def _where(p: PointSummary) -> str:
    return f"{md_text(p.workload)} {load_label(p)}, ISL {p.isl}"


def _line(ctx: ReportContext, c: Caveat) -> str:
    """A caveat as the first screen's warning: one sentence with its consequence."""
    names = [md_text(n) for n in c.servers]
    if c.kind == "synthetic acceptance":
        forced = f" at acceptance length {md_text(c.forced_length)}" if c.forced_length else ""
        return (
            f"- ⚠ Synthetic acceptance: {names[0]} forces its drafts' acceptance{forced} "
            f"(`{SYNTHETIC} synthetic`): its speed is what that acceptance would give, not what this draft "
            "method achieves on real text."
        )
    if c.kind == "dummy weights":
        return (
            f"- ⚠ Dummy weights: {', '.join(names)} ran random weights (`--load-format dummy`): "
            "outputs are noise, so accuracy cannot be checked, and speed with real weights may differ."
        )
    if c.kind == "accuracy not checked":
        return "- ❔ accuracy: not checked. No eval ran, so nothing here shows the candidate still answers correctly."
    if c.kind == "invalid point" and c.point is not None:
        return _invalid_line(c.point)
    if c.kind == "invalid on one side":
        return _one_side_line(ctx, c.servers[0], c.servers[1], c.one_side)
    if c.kind == "wake integrity":
        return (
            f"- ⚠ {md_text(c.changed)}: {names[0]} vs {names[1]}'s waves since "
            "the last good fingerprint are invalid and were measured again sequentially."
        )
    if c.kind == "wake effect" and c.wake_effect is not None:
        w = c.wake_effect
        return (
            f"- ⚠ Wake-up flagged: {md_text(w.server)} at {md_text(w.point_id)} ran at {w.ratio or 0:.2f}× its "
            "continued speed right after waking: the pair's ratio there carries the wake-up's effect."
        )
    return (
        f"- ⚠ Baseline not stock: the plan declares {names[1]} is not a stock launch, so "
        f"{names[0]}'s numbers are against that launch, not against stock vLLM."
    )


@dataclass(frozen=True)
class WarningLine:
    """One caveat of the bundle (``byog.analysis.caveats``) and its first-screen line (markdown)."""

    caveat: Caveat
    line: str


def warnings(ctx: ReportContext) -> list[WarningLine]:
    """The bundle's caveats, each worded: what the headline, verify and the attestations all read."""
    return [WarningLine(c, _line(ctx, c)) for c in caveats(ctx.summary, ctx.servers, ctx.plan)]


def warning_lines(ctx: ReportContext) -> list[str]:
    """Every condition that voids or limits the claim: one sentence each, with its consequence."""
    return [w.line for w in warnings(ctx)]


_ESCAPED = re.compile(r"\\(.)")


def plain(line: str) -> str:
    """A first-screen markdown line as terminal text: no bullet, bold or code marks, escapes undone."""
    text = line.removeprefix("- ").replace("**", "").replace("`", "")
    return _ESCAPED.sub(r"\1", text)


def summary_lines(ctx: ReportContext) -> list[str]:
    """verify's summary lines (plain text): 'setup: ...' per pair, then 'warning: ...' each."""
    return [f"setup: {plain(x)}" for x in setup_lines(ctx)] + [f"warning: {plain(x)}" for x in warning_lines(ctx)]
