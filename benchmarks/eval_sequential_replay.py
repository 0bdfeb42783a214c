"""Items saved by stopping evals early, replayed on recorded per-item outcomes: each run directory's
items.parquet files under its plan with looks added to every eval (fractions of the eval's limit).
The later server of a pair (the candidate: the baseline runs first in both pipelines here) keeps only
the items up to the look where the group-sequential gate stops, as ``byog.evals.runner`` would have
run them (the same ``sequential_for``), and the summary is derived again from those records: the
verdict at the stop is compared with the one-look verdict on every item.

    python benchmarks/eval_sequential_replay.py [RUN_DIR ...] [--looks 0.5 0.75 1.0]

Default run directories: the committed runs in benchmarks/results that kept per-item records.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.eval_summary import item_scores, paired, passes_of, sequential_for, summarize_evals
from byog.analysis.group_sequential import item_order, missing_items
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from byog.schemas.plan import Plan

RESULTS = REPO / "benchmarks/results"
DEFAULT_RUNS = sorted(p.parent for p in RESULTS.glob("*/*/plan.yaml") if (p.parent / "evals").is_dir())


def keep_first(rd: RunDir, server: str, task: str, keys: list[tuple[str, str]]) -> None:
    """Keep the server's records of ``keys`` only: the items a run that stopped there ran."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = rd.eval_items(server, task)
    table = pq.read_table(path)
    wanted = set(keys)
    rows = zip(table.column("item_id").to_pylist(), table.column("item_sha256").to_pylist(), strict=True)
    pq.write_table(table.filter(pa.array([key in wanted for key in rows])), path)


def stopped_verdict(run: Path, plan: Plan, task: str, cand: str, base: str, used: int) -> tuple[str, bool]:
    """The summary's verdict from records where the candidate ran only the first ``used`` paired items."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(run / "evals", Path(tmp) / "evals")
        rd = RunDir(Path(tmp))
        keys = sorted(set(item_scores(rd, cand, task)) & set(item_scores(rd, base, task)), key=item_order)
        keep_first(rd, cand, task, keys[:used])
        verdict = next(v for v in summarize_evals(rd, plan).verdicts if (v.task, v.candidate) == (task, cand))
        assert verdict.sequential is not None
        return verdict.verdict, missing_items(verdict.sequential)


def replay(run: Path, looks: list[float]) -> list[str]:
    rd = RunDir(run)
    plan = parse_plan((run / "plan.yaml").read_text(encoding="utf-8"), str(run / "plan.yaml"))
    one_look = {(v.task, v.candidate, v.baseline): v.verdict for v in summarize_evals(rd, plan).verdicts}
    label = run.relative_to(RESULTS) if run.is_relative_to(RESULTS) else run
    rows = []
    for spending in ("obf", "pocock"):
        with_looks = plan.model_copy(
            update={"evals": [s.model_copy(update={"looks": looks, "spending": spending}) for s in plan.evals]}
        )
        for (task, cand, base), verdict in sorted(one_look.items()):
            limit = next(s.limit for s in plan.evals if s.task == task)
            c, b = item_scores(rd, cand, task), item_scores(rd, base, task)
            passes = min(passes_of(rd, cand, task), passes_of(rd, base, task))
            record = sequential_for(with_looks, task, cand, base, c, b, passes)
            if record is None or limit is None or len(paired(c, b)[0]) < limit:
                continue
            used = record.items_used
            stopped, missing = stopped_verdict(run, with_looks, task, cand, base, used)
            rows.append(
                f"| {label} | {task} | {cand} vs {base} | {spending} | {verdict} | {stopped} ({record.decision}) | "
                f"{len(record.looks)} | {used} / {limit} | {limit + used} / {2 * limit} | "
                f"{100 * (limit - used) / (2 * limit):.0f}% | {'refused' if missing else 'ok'} |"
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, default=DEFAULT_RUNS)
    parser.add_argument("--looks", type=float, nargs="+", default=[0.5, 0.75, 1.0])
    args = parser.parse_args()
    print(f"looks at {', '.join(f'{t:.2f}' for t in args.looks)} of each eval's limit; the later server stops\n")
    print(
        "| run | task | pair | spending | one-look verdict, every item | verdict at the stop (gate) | looks | "
        "later server: items run / planned | both servers | items saved | verify's records check |"
    )
    print("|---|---|---|---|---|---|---:|---:|---:|---:|---|")
    for run in args.runs:
        for row in replay(run.resolve(), args.looks):
            print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
