"""report.md's numerics section and its plot: per-position divergence against the A/A envelope.

The section is a pure function of summary.json's ``numerics`` (verify re-renders it byte for
byte); the plot reads the raw per-position rows again to draw every position, not just the
bucket means.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from byog.analysis.numerics import before_divergence, compare_positions, divergences, envelope
from byog.analysis.numerics_summary import OTHER_PASS, REFERENCE_PASS, load_pass
from byog.core.paths import RunDir
from byog.core.safe_text import md_text
from byog.report.format import fixed, num, table
from byog.schemas.numerics import Family, FamilyComparison, NumericsBucket, NumericsSummary

NUMERICS_PLOT = "numerics_divergence.png"
FAMILY_LABEL = {
    "prefill": "prefill (prompt positions, teacher-forced)",
    "decode": "decode (greedy output, before the first divergence)",
}


def _bucket_rows(family: FamilyComparison) -> list[list[str]]:
    aa = {b.start: b for b in family.aa}
    variant = {b.start: b for b in family.variant}
    dist = {d.start: d for d in family.distances}
    rows = []
    for b in family.candidate:
        ref, var, d = aa.get(b.start), variant.get(b.start), dist.get(b.start)
        rows.append(
            [
                b.bucket,
                num(b.positions) + ("" if d is not None and d.judged else " (not judged)"),
                num(b.mean_abs_dlogprob, 3),
                num(ref.mean_abs_dlogprob, 3) if ref else "–",
                num(var.mean_abs_dlogprob, 3) if var else "–",
                num(b.mean_kl, 3),
                num(ref.mean_kl, 3) if ref else "–",
                num(var.mean_kl, 3) if var else "–",
                f"**{num(d.distance, 3)}**" if d is not None else "–",
                fixed(b.argmax_agreement, 3),
                fixed(b.topk_overlap, 3),
            ]
        )
    return rows


def _sensitivity_lines(numerics: NumericsSummary) -> list[str]:
    rows = [
        [
            s.baseline,
            "yes" if s.sensitive else "**no: insensitive**",
            s.control or "–",
            s.control_verdict or "–",
            num(s.control_distance, 3),
            s.variant or "A/A only",
            fixed(s.head_ratio, 4),
            s.reason,
        ]
        for s in numerics.sensitivity
    ]
    if not rows:
        return []
    return [
        "### Sensitivity",
        "",
        "A verdict is evidence only when the differential sees a change of known size on this model and server: the "
        "control (the baseline with the plan's `numerics.control`) must land beyond the envelope, and the baseline's "
        "next-token distributions must not be flat (p(top-1)/p(top-k) is 1 for a uniform distribution). Otherwise "
        "every comparison of that baseline reads **insensitive**: no evidence either way.",
        "",
        *table(
            [
                "Baseline",
                "Sensitive",
                "Control",
                "Control verdict",
                "Control distance (envelopes)",
                "Envelope variant",
                "p(top-1)/p(top-k)",
                "Why",
            ],
            rows,
        ),
    ]


def _divergence(family: FamilyComparison) -> str:
    cand, aa = family.candidate_divergence, family.aa_divergence
    if cand is None or aa is None:
        return "–"
    return f"{cand.diverged}/{cand.prompts} (A/A {aa.diverged}/{aa.prompts})"


def _escaper(report_format: int) -> Callable[[Any], str]:
    """Format 2 wrote these fields unescaped: its re-render keeps their inner underscores as written."""
    return md_text if report_format >= 3 else partial(md_text, inner_underscores=True)


def _comparisons_intro(numerics: NumericsSummary) -> list[str]:
    tolerance = numerics.tolerance
    lines: list[str] = []
    lines += [
        "Each server answers the same prompts: every prompt position teacher-forced (prefill) and a greedy output "
        "(decode, compared until the outputs first differ), position by position against the baseline's answers "
        "sent one request at a time. Envelope per bucket = max(A/A, A/A′, floor): A/A is the baseline against "
        "itself "
        "with all requests at once, A/A′ the plan's stock envelope variant. A candidate's distance is its mean "
        "|Δlogprob| or mean KL in envelopes, whichever is larger; **numerically equivalent** up to "
        f"{tolerance.envelope_factor:g} envelopes, **drifts** beyond, **diverges** when a bucket's mean KL > "
        f"{tolerance.diverge_kl:g} nats (docs/numerics.md). KL: on the shared top-k support with the rest lumped, "
        "a lower bound of the true KL.",
        "",
    ]
    return lines


def _pairs_table(numerics: NumericsSummary, md_text: Callable[[Any], str]) -> list[str]:
    lines: list[str] = []
    rows = []
    for c in numerics.comparisons:
        fams = {f.family: f for f in c.families}
        rows.append(
            [
                f"{md_text(c.candidate)} vs {md_text(c.baseline)}",
                f"**{c.verdict}**",
                fams["prefill"].verdict if "prefill" in fams else "–",
                fams["decode"].verdict if "decode" in fams else "–",
                num(c.max_distance, 3),
                _divergence(fams["decode"]) if "decode" in fams else "–",
                fixed(c.baseline_wall_s, 1),
                fixed(c.candidate_wall_s, 1),
                fixed(c.plain_decode_wall_s, 1),
            ]
        )
    lines += table(
        [
            "Pair",
            "Verdict",
            "Prefill",
            "Decode",
            "Max distance (envelopes)",
            "Greedy outputs diverged",
            "Baseline passes (s)",
            "Candidate pass (s)",
            "Plain generation (s)",
        ],
        rows,
    )
    lines += [
        "Plain generation: the same prompts and output tokens generated by the baseline at once without "
        "logprobs, the yardstick for what the numerics passes cost.",
        "",
    ]
    return lines


def _family_tables(numerics: NumericsSummary, md_text: Callable[[Any], str]) -> list[str]:
    lines: list[str] = []
    for c in numerics.comparisons:
        for family in c.families:
            pair = f"{md_text(c.candidate)} vs {md_text(c.baseline)}"
            lines += [f"### {pair}: {FAMILY_LABEL[family.family]}: {family.verdict}", ""]
            lines += [f"- {md_text(reason)}" for reason in family.reasons] + ([""] if family.reasons else [])
            lines += table(
                [
                    "Positions",
                    "n",
                    "mean |Δlogprob|",
                    "A/A",
                    "A/A′",
                    "mean KL",
                    "A/A",
                    "A/A′",
                    "distance (envelopes)",
                    "argmax agree",
                    "top-k overlap",
                ],
                _bucket_rows(family),
            )
    return lines


def _conformance_lines(numerics: NumericsSummary, md_text: Callable[[Any], str]) -> list[str]:
    lines: list[str] = []
    lines += ["### Conformance", ""]
    held = {(p.candidate, r.check): r.outcome for p in numerics.conformance for r in p.checks}
    rows = []
    for server in numerics.conformance_servers:
        for check in server.checks:
            outcome = held.get((server.server, check.check), "pass" if check.passed else "fail")
            rows.append(
                [
                    md_text(server.server),
                    md_text(check.check),
                    f"**{outcome}**" if outcome == "fail" else outcome,
                    md_text(check.reason),
                ]
            )
    lines += [
        'A candidate fails a check only where its baseline passes it (**fail**); where both fail it is "not held".',
        "",
    ]
    lines += table(["Server", "Check", "Outcome", "Reason"], rows)
    return lines


def numerics_section(numerics: NumericsSummary | None, report_format: int = 3) -> list[str]:
    """## Numerics: the verdicts, each family's buckets against the envelope, and conformance."""
    md_text = _escaper(report_format)
    if numerics is None:
        return []
    lines = ["## Numerics", ""]
    if numerics.comparisons:
        lines += _comparisons_intro(numerics)
        lines += _pairs_table(numerics, md_text)
        lines += _sensitivity_lines(numerics)
        lines += _family_tables(numerics, md_text)
        lines += [f"Per-position divergence against the A/A envelope: plots/{NUMERICS_PLOT}.", ""]
    if numerics.conformance_servers:
        lines += _conformance_lines(numerics, md_text)
    return lines


# --- the plot ---------------------------------------------------------------------------------


def _step(buckets: list[NumericsBucket], values: list[float]) -> tuple[list[float], list[float]]:
    """A step line over the buckets; a gap (NaN) where buckets are not adjacent."""
    xs: list[float] = []
    ys: list[float] = []
    for b, v in zip(buckets, values, strict=True):
        if xs and xs[-1] != b.start:
            xs.append(float("nan"))
            ys.append(float("nan"))
        xs += [max(b.start, 1), b.end]
        ys += [v, v]
    return xs, ys


def plot_numerics(run_dir: RunDir, numerics: NumericsSummary, save: Any) -> None:
    """One panel per family: each position's |Δlogprob| (dots), bucket means (lines), the envelope (shaded)."""
    import matplotlib.pyplot as plt

    if not numerics.comparisons:
        return
    tolerance = numerics.tolerance
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    floor = 1e-7
    families: tuple[Family, Family] = ("prefill", "decode")
    for ax, family in zip(axes, families, strict=True):
        for i, c in enumerate(numerics.comparisons):
            fam = next((f for f in c.families if f.family == family), None)
            if fam is None:
                continue
            ref = load_pass(run_dir, c.baseline, REFERENCE_PASS)[family]
            for label, server, color in (
                (f"A/A ({c.baseline})", c.baseline, "black"),
                (c.candidate, c.candidate, f"C{i}"),
            ):
                if server == c.baseline and i > 0:
                    continue  # one A/A per baseline is enough
                other = load_pass(run_dir, server, OTHER_PASS)[family]
                if family == "decode":
                    found = divergences(ref, other)
                    metrics = compare_positions(before_divergence(ref, found), before_divergence(other, found))
                else:
                    metrics = compare_positions(ref, other)
                ax.scatter(
                    metrics.position + 1, [max(v, floor) for v in metrics.abs_dlogprob], s=2, alpha=0.25, color=color
                )
                buckets = fam.aa if server == c.baseline else fam.candidate
                xs, ys = _step(buckets, [max(b.mean_abs_dlogprob or 0.0, floor) for b in buckets])
                style = {"linestyle": "--", "linewidth": 1} if server == c.baseline else {"linewidth": 2}
                ax.plot(xs, ys, color=color, label=f"{label}: bucket mean", **style)
            if i == 0:
                xs, aa_ys = _step(fam.aa, [max(b.mean_abs_dlogprob or 0.0, floor) for b in fam.aa])
                variant = {v.start: v.model_dump() for v in fam.variant}
                _, env_ys = _step(
                    fam.aa,
                    [
                        max(envelope(b.model_dump(), variant.get(b.start), tolerance)["mean_abs_dlogprob"], floor)
                        for b in fam.aa
                    ],
                )
                ax.fill_between(xs, aa_ys, env_ys, color="tab:green", alpha=0.15)
                ax.plot(xs, env_ys, color="tab:green", linestyle=":", linewidth=1.5, label="A/A envelope")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("context position (tokens before the predicted one)")
        ax.set_title(FAMILY_LABEL[family], fontsize=9)
    axes[0].set_ylabel("|Δ logprob| of the reference token (nats)")
    axes[1].legend(fontsize=7, loc="upper left")
    fig.suptitle("Per-position divergence from the baseline vs the A/A envelope", fontsize=10)
    save(fig, NUMERICS_PLOT)
