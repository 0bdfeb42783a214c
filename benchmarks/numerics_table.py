"""Re-print the numerics differential's per-position curves from committed run directories.

Each folder under ``benchmarks/results/numerics/`` is a run directory as ``byog check numerics``
wrote it (plan.yaml, numerics/<server>/*.parquet + record.json, conformance/*.json, the
summary and report for reference). Every number printed here is re-derived from the raw
per-position rows by ``byog.analysis.numerics_summary`` (the one home of the formulas), so the
tables cannot drift from the data.

    python benchmarks/numerics_table.py                     # every committed run
    python benchmarks/numerics_table.py RUN_DIR [RUN_DIR]   # these run directories
    python benchmarks/numerics_table.py --json              # the derived numerics summary as JSON
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.numerics import envelope
from byog.analysis.numerics_summary import summarize_numerics
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from byog.schemas.numerics import NumericsSummary

RESULTS = REPO / "benchmarks" / "results" / "numerics"


def derive(run_dir: Path) -> NumericsSummary | None:
    rd = RunDir(run_dir)
    plan = parse_plan(rd.plan_yaml.read_text(encoding="utf-8"), str(rd.plan_yaml))
    return summarize_numerics(rd, plan)


def _g(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def print_run(name: str, numerics: NumericsSummary) -> None:
    tol = numerics.tolerance
    for c in numerics.comparisons:
        print(
            f"\n== {name}: {c.candidate} vs {c.baseline}: {c.verdict}   (passes: baseline {c.baseline_wall_s:.1f} s, "
            f"candidate {c.candidate_wall_s:.1f} s; plain generation of the same tokens {_g(c.plain_decode_wall_s)} s)"
        )
        for fam in c.families:
            print(f"  -- {fam.family}: {fam.verdict}" + "".join(f"\n     {r}" for r in fam.reasons))
            if fam.candidate_divergence and fam.aa_divergence:
                d, a = fam.candidate_divergence, fam.aa_divergence
                print(
                    f"     greedy outputs diverged: {d.diverged}/{d.prompts} prompts (earliest {d.earliest}); "
                    f"A/A {a.diverged}/{a.prompts} (earliest {a.earliest})"
                )
            print(
                f"     {'positions':>13} {'n':>6} {'|dlp| cand':>10} {'A/A':>9} {'env':>9} {'KL cand':>9} {'A/A':>9} "
                f"{'env':>9} {'argmax':>7} {'A/A':>6} {'top-k':>6}"
            )
            aa = {b.start: b for b in fam.aa}
            for b in fam.candidate:
                ref = aa.get(b.start)
                env = envelope(ref.model_dump(), tol) if ref else {}
                print(
                    f"     {b.bucket:>13} {b.positions:>6} {_g(b.mean_abs_dlogprob):>10} "
                    f"{_g(ref.mean_abs_dlogprob) if ref else '–':>9} {_g(env.get('mean_abs_dlogprob')):>9} "
                    f"{_g(b.mean_kl):>9} {_g(ref.mean_kl) if ref else '–':>9} {_g(env.get('mean_kl')):>9} "
                    f"{b.argmax_agreement:>7.3f} {ref.argmax_agreement if ref else float('nan'):>6.3f} "
                    f"{b.topk_overlap:>6.3f}"
                )
    for pair in numerics.conformance:
        failed = [f"{r.check} ({r.reason})" for r in pair.checks if r.outcome == "fail"]
        print(
            f"\n   conformance {pair.candidate} vs {pair.baseline}: "
            + ("conforms" if pair.conforms else "FAILS " + "; ".join(failed))
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
