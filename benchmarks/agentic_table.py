"""Re-print the agentic plan's numbers (issue 15) from run directories, with byog's own formulas.

Reads only raw files: each run directory's plan.yaml, point records and per-turn rows; the
numbers are re-derived by ``byog.analysis.bench_summary.summarize_bench`` (the one home of every
formula), so a changed formula or an edited file shows up here.

    python benchmarks/agentic_table.py                       # the committed H200 run(s)
    python benchmarks/agentic_table.py RUN_DIR [RUN_DIR...]  # any run directory of the agentic plan
    python benchmarks/agentic_table.py --json RUN_DIR        # the rows as JSON
    python benchmarks/agentic_table.py import TAG.tar.xz     # device tarball -> benchmarks/results/h200-agentic/TAG

The import keeps what the table needs (plan.yaml, env.json, servers/*/server.json, bench/) and
drops the /metrics snapshots (their deltas stay in each point record) and server logs over 200 kB.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from byog.analysis.bench_summary import summarize_bench
from byog.analysis.summary import plan_of
from byog.core.paths import RunDir
from byog.report.agentic import frontier_groups, server_gpus
from byog.schemas.evals import EvalSummary
from byog.schemas.summary import Summary, SummaryPlan

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "h200-agentic"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def summary_of(run: Path) -> tuple[Summary, dict[str, int]]:
    rd = RunDir(run)
    plan = plan_of(rd)
    summary = Summary(
        plan=SummaryPlan(name=plan.name, baseline=plan.baseline, candidates=plan.candidates),
        bench=summarize_bench(rd, plan),
        evals=EvalSummary(),
    )
    return summary, server_gpus(rd, plan)


def rows_of(run: Path) -> dict[str, Any]:
    summary, gpus = summary_of(run)
    points = []
    for p in summary.bench.points:
        if p.metrics is None:
            continue  # not measured in this run directory (the plan's other server)
        s, g = p.sessions, p.goodput
        points.append(
            {
                "server": p.server,
                "point": p.point_id,
                "valid": p.valid,
                "invalid_reasons": p.invalid_reasons,
                "requests": p.n_requests,
                "tok_s_user": {q: getattr(p.metrics.tok_s_user, q) for q in ("p50", "p90", "p99")},
                "ttft_s_p50": p.metrics.ttft_s.p50,
                "tpot_s_p50": p.metrics.tpot_s.p50,
                "output_tok_s": p.metrics.output_tok_s,
                "sessions": None
                if s is None
                else {
                    "sessions": s.sessions,
                    "turns": s.turns,
                    "subagent_turns": s.subagent_turns,
                    "hit_rate_usage": s.prefix_hit_rate,
                    "hit_rate_counters": s.prefix_hit_rate_counters,
                    "reusable_share": s.reusable_share,
                    "ttft_p50_by_turn": {t.turn: t.p50 for t in s.ttft_s_by_turn},
                    "session_s_p50": s.session_s.p50,
                },
                "goodput": None
                if g is None
                else {
                    "slo_share": g.slo_share,
                    "goodput_req_s": g.goodput_req_s,
                    "goodput_tok_s": g.goodput_tok_s,
                    "meets_target": g.meets_target,
                },
            }
        )
    searches = [s.model_dump(mode="json") for s in summary.bench.rate_searches if s.probes]
    frontiers = [
        {
            "server": g.server,
            "workload": g.workload,
            "gpus": g.gpus,
            "y": g.y_metric,
            "points": [(p.label, p.tok_s_user, p.tok_s_gpu, p.valid) for p in g.points],
            "frontier": [p.label for p in g.frontier],
        }
        for g in frontier_groups(summary, gpus)
    ]
    return {"run": str(run), "points": points, "rate_searches": searches, "frontiers": frontiers}


def _f(x: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if x is None else f"{x * scale:.{digits}f}"


def print_run(data: dict[str, Any]) -> None:
    print(f"## {data['run']}\n")
    print(
        "| server | point | turns | tok/s/user P50 | P90 | P99 | TTFT P50 ms | hit rate usage | counters | ideal "
        "| TTFT P50 by turn (ms) | session P50 s | SLO share | valid |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|")
    for p in data["points"]:
        s, g, u = p["sessions"] or {}, p["goodput"] or {}, p["tok_s_user"]
        by_turn = ", ".join(f"{k}: {_f(v, 1e3, 0)}" for k, v in (s.get("ttft_p50_by_turn") or {}).items()) or "-"
        print(
            f"| {p['server']} | {p['point']} | {p['requests']} | {_f(u['p50'])} | {_f(u['p90'])} | {_f(u['p99'])} "
            f"| {_f(p['ttft_s_p50'], 1e3)} | {_pct(s.get('hit_rate_usage'))} | {_pct(s.get('hit_rate_counters'))} "
            f"| {_pct(s.get('reusable_share'))} | {by_turn} | {_f(s.get('session_s_p50'), 1, 2)} "
            f"| {_pct(g.get('slo_share'))} | {'yes' if p['valid'] else 'NO: ' + '; '.join(p['invalid_reasons'])} |"
        )
    for s in data["rate_searches"]:
        probes = ", ".join(
            f"{pr['rate']:g}: {pr['slo_share']:.0%}" for pr in s["probes"] if pr["slo_share"] is not None
        )
        print(f"\nrate search {s['server']} {s['workload']}: {s['reason']}; probes (req/s: share inside) {probes}")
    for f in data["frontiers"]:
        print(
            f"\nfrontier {f['server']} {f['workload']} ({f['gpus']} GPU, y = {f['y']} per GPU): "
            + ", ".join(
                f"{label} ({_f(x)} tok/s/user, {_f(y)} tok/s/GPU{'' if ok else ', invalid'})"
                for label, x, y, ok in f["points"]
            )
            + f"; on the frontier: {', '.join(f['frontier'])}"
        )
    print()


def import_tarball(tarball: Path, tag: str | None) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        (root,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
        dest = RESULTS / (tag or root.name)
        if dest.exists():
            raise SystemExit(f"{dest} exists; remove it first")
        shutil.copytree(root, dest, ignore=shutil.ignore_patterns("*.prom"))
    for log in dest.rglob("*.log"):
        if log.stat().st_size > 200_000:
            log.write_text("".join(log.read_text(errors="replace").splitlines(keepends=True)[-400:]))
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "runs", nargs="*", help="run directories (default: every byog-* under the committed H200 results)"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--tag", help="import: the folder name under benchmarks/results/h200-agentic/")
    args = parser.parse_args()
    if args.runs[:1] == ["import"]:
        print(import_tarball(Path(args.runs[1]), args.tag))
        return 0
    runs = [Path(r) for r in args.runs] or sorted(RESULTS.glob("*/byog-*/"))
    if not runs:
        print(f"no run directories given and none under {RESULTS}", file=sys.stderr)
        return 1
    data = [rows_of(r) for r in runs]
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        for d in data:
            print_run(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
