"""Print issue 13's long-context decode step-time matrix of a run directory (default: the one-H200,
TP1 run in benchmarks/results/h200-longctx-tp1/), re-derived from its raw rows and point records.

    python benchmarks/h200_longctx_table.py [RUN_DIR]

The summary is re-derived by ``byog.analysis.summary.derive_summary`` (the one home of the
formulas) and compared with the committed summary.json. One matrix over both workloads: rows B,
columns ISL; each cell is decode step time in ms (``decode_step_s``) / tok/s/user P50 / TTFT P50
in s. A starred cell is a point byog flagged invalid; its reasons are listed under the table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.summary import derive_summary
from byog.core.paths import RunDir

DEFAULT = REPO / "benchmarks" / "results" / "h200-longctx-tp1"


def _isl(isl: int) -> str:
    return f"ISL {isl // 1024}k" if isl % 1024 == 0 else f"ISL {isl:,}"


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else DEFAULT
    run_dir = RunDir(folder)
    summary = derive_summary(run_dir)
    committed = json.loads(run_dir.summary_json.read_text(encoding="utf-8")) if run_dir.summary_json.is_file() else None
    print(
        f"# {folder.name} ({summary.plan.name}); re-derived summary equals the committed one: "
        f"{committed == summary.to_json() if committed is not None else None}\n"
    )
    points = [p for p in summary.bench.points if p.kind == "batch" and p.metrics is not None]
    isls = sorted({p.isl for p in points})
    batches = sorted({p.batch_size for p in points})
    by_key = {(p.isl, p.batch_size): p for p in points}
    print("decode step ms / tok/s/user P50 / TTFT P50 s  (* = point flagged invalid)\n")
    print("| B | " + " | ".join(_isl(i) for i in isls) + " |")
    print("|---:|" + "---:|" * len(isls))
    for b in batches:
        cells = []
        for i in isls:
            p = by_key.get((i, b))
            if p is None:
                cells.append("–")
                continue
            m = p.metrics
            cell = f"{m.decode_step_s * 1e3:.3f} / {m.tok_s_user.p50:.1f} / {m.ttft_s.p50:.3f}"
            cells.append(cell if p.valid else cell + "*")
        print(f"| {b} | " + " | ".join(cells) + " |")
    invalid = [p for p in points if not p.valid]
    if invalid:
        print()
        for p in invalid:
            print(f"- {p.point_id}: {'; '.join(p.invalid_reasons)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
