"""Re-print the numerics differential's per-position curves from committed run directories.

Each folder under ``benchmarks/results/numerics/`` is a run directory as ``byog check numerics``
wrote it (plan.yaml, numerics/<server>/*.parquet + record.json, conformance/*.json, the
summary and report for reference). Every number printed here is re-derived from the raw
per-position rows by ``byog.analysis.numerics_summary`` (the one home of the formulas), so the
tables cannot drift from the data.

    python benchmarks/numerics_table.py                     # every committed run
    python benchmarks/numerics_table.py RUN_DIR [RUN_DIR]   # these run directories
    python benchmarks/numerics_table.py --json              # the derived numerics summary as JSON
    python benchmarks/numerics_table.py RUN_DIR --variant SERVER   # also: SERVER's pass as the A/A' side

Each run starts with one table: per comparison the rule's verdict, its largest distance in
envelopes, the greedy outputs that diverged and the headline; per baseline its control.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis import numerics as nm
from byog.analysis.numerics_headline import numerics_headline, weakness
from byog.analysis.numerics_summary import BaselinePasses, summarize_numerics
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from byog.schemas.numerics import NumericsComparison, NumericsSummary

RESULTS = REPO / "benchmarks" / "results" / "numerics"


def derive(run_dir: Path) -> NumericsSummary | None:
    rd = RunDir(run_dir)
    plan = parse_plan(rd.plan_yaml.read_text(encoding="utf-8"), str(rd.plan_yaml))
    return summarize_numerics(rd, plan)


def _g(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def _diverged(comparison: NumericsComparison) -> str:
    decode = next((f for f in comparison.families if f.family == "decode"), None)
    d = decode.candidate_divergence if decode else None
    a = decode.aa_divergence if decode else None
    return f"{d.diverged}/{d.prompts} prompts (A/A {a.diverged})" if d and a else ""


def verdict_table(numerics: NumericsSummary) -> list[str]:
    """Markdown: per comparison the rule's verdict, its largest distance, the greedy divergences and the
    headline; per baseline its control's distance and whether the baseline is sensitive."""
    sensitivity = {s.baseline: s for s in numerics.sensitivity}
    rows = [
        "| comparison | rule verdict | max distance | greedy outputs diverged | headline |",
        "|---|---|---|---|---|",
    ]
    for c in numerics.comparisons:
        rows.append(
            f"| {c.candidate} vs {c.baseline} | {c.rule_verdict or '–'} | {_g(c.max_distance)} envelopes "
            f"| {_diverged(c)} | {numerics_headline(c, sensitivity.get(c.baseline))} |"
        )
    for sens in numerics.sensitivity:
        name = f"{sens.control_change or 'custom'} ({sens.control or 'not run'})"
        said = "baseline sensitive" if sens.sensitive else f"baseline insensitive: {weakness(sens)}"
        rows.append(
            f"| control {name} of {sens.baseline} | {sens.control_verdict or '–'} | "
            f"{_g(sens.control_distance)} envelopes | | {said} |"
        )
    return rows


def print_run(name: str, numerics: NumericsSummary) -> None:
    tol = numerics.tolerance
    print(f"\n== {name}\n")
    print("\n".join(verdict_table(numerics)) + "\n")
    for sens in numerics.sensitivity:
        print(
            f"   sensitivity of {sens.baseline}: {'sensitive' if sens.sensitive else 'INSENSITIVE'}; {sens.reason}; "
            f"envelope variant {sens.variant or '(none: A/A only)'}; median p(top-1)/p(top-k) {_g(sens.head_ratio)}, "
            f"mean p(top-1) {_g(sens.mean_top1_prob)}"
        )
        for fam in sens.control_families:
            dist = " ".join(f"{d.bucket}:{d.distance:.3g}" for d in fam.distances if d.judged)
            print(f"     control {sens.control} {fam.family}: {fam.verdict}; distance in envelopes {dist}")
    print(
        f"\n   {'candidate':<16} {'verdict':<24} {'rule alone':<24} {'max dist':>8}  distance in envelopes per bucket"
    )
    for c in numerics.comparisons:
        per = "; ".join(
            f.family + " " + " ".join(f"{d.bucket}:{d.distance:.3g}" for d in f.distances if d.judged)
            for f in c.families
        )
        print(f"   {c.candidate:<16} {c.verdict:<24} {c.rule_verdict or '–':<24} {_g(c.max_distance):>8}  {per}")
    for c in numerics.comparisons:
        if not c.families:
            continue
        print(
            f"\n-- {c.candidate} vs {c.baseline}: {c.verdict}   (passes: baseline {_g(c.baseline_wall_s)} s, "
            f"candidate {_g(c.candidate_wall_s)} s; plain generation of the same tokens {_g(c.plain_decode_wall_s)} s)"
        )
        for fam in c.families:
            print(f"  -- {fam.family}: {fam.verdict}" + "".join(f"\n     {r}" for r in fam.reasons))
            if fam.candidate_divergence and fam.aa_divergence:
                d, a = fam.candidate_divergence, fam.aa_divergence
                v = fam.variant_divergence
                print(
                    f"     greedy outputs diverged: {d.diverged}/{d.prompts} prompts (earliest {d.earliest}); "
                    f"A/A {a.diverged}/{a.prompts}" + (f"; A/A' {v.diverged}/{v.prompts}" if v else "")
                )
            print(
                f"     {'positions':>13} {'n':>6} {'|dlp| cand':>10} {'A/A':>9} {'A/Av':>9} {'KL cand':>9} {'A/A':>9} "
                f"{'A/Av':>9} {'dist':>7} {'argmax':>7} {'top-k':>6}"
            )
            aa = {b.start: b for b in fam.aa}
            var = {b.start: b for b in fam.variant}
            dist = {d.start: d for d in fam.distances}
            for b in fam.candidate:
                ref, v, d = aa.get(b.start), var.get(b.start), dist.get(b.start)
                print(
                    f"     {b.bucket:>13} {b.positions:>6} {_g(b.mean_abs_dlogprob):>10} "
                    f"{_g(ref.mean_abs_dlogprob if ref else None):>9} {_g(v.mean_abs_dlogprob if v else None):>9} "
                    f"{_g(b.mean_kl):>9} {_g(ref.mean_kl if ref else None):>9} {_g(v.mean_kl if v else None):>9} "
                    f"{_g(d.distance if d else None):>7}{'' if d and d.judged else '*'} "
                    f"{b.argmax_agreement:>6.3f} {b.topk_overlap:>6.3f}"
                )
    print(f"\n   (envelope factor {tol.envelope_factor:g}; * = bucket not judged)")
    for pair in numerics.conformance:
        failed = [f"{r.check} ({r.reason})" for r in pair.checks if r.outcome == "fail"]
        print(
            f"\n   conformance {pair.candidate} vs {pair.baseline}: "
            + ("conforms" if pair.conforms else "FAILS " + "; ".join(failed))
        )


def print_with_variant(run_dir: Path, variant: str) -> None:
    """The same raw rows with another recorded server of the run as the envelope variant: what the
    verdicts would read had the plan named that stock variant (its own comparison is left out)."""
    rd = RunDir(run_dir)
    plan = parse_plan(rd.plan_yaml.read_text(encoding="utf-8"), str(rd.plan_yaml))
    tol = plan.numerics.tolerance if plan.numerics else None
    assert tol is not None, "a plan with a numerics section"
    others = sorted(p.name for p in (rd.root / "numerics").iterdir() if (p / "record.json").is_file())
    print(f"\n== {run_dir.name}, re-derived with '{variant}' as the envelope variant")
    for baseline in dict.fromkeys(b for _, b in plan.comparisons):
        passes = BaselinePasses(rd, baseline, variant)
        for other in others:
            if other in (baseline, variant):
                continue
            families = passes.families(rd, other, tol)
            worst = max(families, key=lambda f: nm.SEVERITY[f.verdict]).verdict
            per = "; ".join(
                f.family + " " + " ".join(f"{d.bucket}:{d.distance:.3g}" for d in f.distances if d.judged)
                for f in families
            )
            print(f"   {other:<16} {worst:<24} {per}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--variant", help="also re-derive with this recorded server as the envelope variant")
    args = parser.parse_args()
    runs = args.runs or sorted(p for p in RESULTS.iterdir() if (p / "plan.yaml").is_file())
    derived = {str(run): derive(run) for run in runs}
    if args.json:
        print(
            json.dumps(
                {k: v.model_dump(mode="json") if v else None for k, v in derived.items()}, indent=2, sort_keys=True
            )
        )
        return 0
    for run, numerics in derived.items():
        if numerics is None:
            print(f"{run}: no numerics")
        else:
            print_run(Path(run).name, numerics)
        if args.variant:
            print_with_variant(Path(run), args.variant)
    return 0


if __name__ == "__main__":
    sys.exit(main())
