"""Planned vs observed discordance of every greedy accuracy verdict in the given run directories
(default: every committed run under benchmarks/results with evals), re-derived from raw items.

    python benchmarks/discordance_table.py [RUN_DIR ...]

Per verdict: the design (n, margin), the re-draw rate the plan was judged at and its planned
false-fail rate, then what the pair showed: discordant items, the re-draw rate that implies,
the design's false-fail rate and power at that rate, and the least n sound there
(``byog.analysis.gate_power.observed_design``; docs/statistics.md, "Observed discordance").
A degenerate verdict (floor or ceiling) has no observed rate: no item can disagree there.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.summary import derive_summary
from byog.core.paths import RunDir


def _pct(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f}%"


def committed_runs() -> list[Path]:
    return sorted(
        p.parent for p in (REPO / "benchmarks" / "results").rglob("plan.yaml") if (p.parent / "evals").is_dir()
    )


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv] or committed_runs()
    if not folders:
        print("no run directory with evals (none committed under benchmarks/results)")
        return 0
    print(
        "| run | task | pair | n | margin | scores (cand / base) | verdict | planned re-draw | planned false-fail "
        "| discordant | observed re-draw | false-fail at it | power at it | sound n |"
    )
    print("|---|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for folder in folders:
        summary = derive_summary(RunDir(folder))
        scores = {(s.server, s.task): s.score for s in summary.evals.scores}
        for v in summary.evals.verdicts:
            cand, base = scores.get((v.candidate, v.task)), scores.get((v.baseline, v.task))
            label = v.screening_label or ("screening" if v.screening else "")
            verdict = (
                v.verdict + (f" ({', '.join(v.degenerate)})" if v.degenerate else "") + (f", {label}" if label else "")
            )
            print(
                f"| {folder.name} | {v.task} | {v.candidate} vs {v.baseline} | {v.n} | {v.margin:g} | "
                f"{cand if cand is None else f'{cand:.1f}'} / {base if base is None else f'{base:.1f}'} | {verdict} | "
                f"{_pct(v.planned_redraw)} | {_pct(v.planned_false_fail, 1)} | {v.discordant} | "
                f"{_pct(v.observed_redraw)} | {_pct(v.observed_false_fail, 1)} | {_pct(v.observed_power)} | "
                f"{v.sound_n if v.sound_n is not None else '–'} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
