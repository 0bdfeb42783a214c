"""Re-print an interleaved run beside the same plan run sequentially, from their raw records.

    python benchmarks/interleave_table.py [ROOT]   # ROOT holds run directories of one plan's pair
                                                   # (default: benchmarks/results/interleave-smollm2)

Every run directory under ROOT, in name order (interleaved/ and sequential/; or study-abba/,
study-baab/, study-seq1/). Per run: the swaps each server recorded (server.json ``sleep_mode``), the
ABBA order of every batch point as its rows hold it (``interleave_seq``, ``interleave_side``), each
measured wave's decode tok/s and their spread, the decode tok/s ratio and its 95 % CI (derived again
from the rows by ``byog.analysis.summary``, with the block bootstrap where the rows are interleaved),
the wake-up check, each eval's items per server (where looks stopped it, and whether in turns) with
the verdict, and the time to verdict.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.bench_summary import decode_rate, wave_units
from byog.analysis.request_columns import read_request_columns
from byog.analysis.summary import derive_summary
from byog.analysis.validity import load_point_record
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.schemas.bench import read_request_rows


def _swaps(rd: RunDir) -> None:
    for record in sorted((rd.root / "servers").glob("*/server.json")):
        sleep = read_json(record).get("sleep_mode")
        if not sleep:
            continue
        swaps = sleep.get("swaps") or []
        sleeps = [s["sleep_s"] for s in swaps if s["sleep_s"] > 0]
        wakes = [s["wake_s"] for s in swaps]
        host = sleep.get("asleep_host_rss_bytes")
        gpu_asleep, gpu_awake = sleep.get("asleep_gpu_used_bytes"), sleep.get("awake_gpu_used_bytes")
        print(
            f"  {record.parent.name} (side {sleep['side']}): {len(swaps)} wake-ups; "
            f"partner's sleep median {statistics.median(sleeps) if sleeps else float('nan'):.3f} s "
            f"(max {max(sleeps, default=float('nan')):.3f}), wake_up median "
            f"{statistics.median(wakes) if wakes else float('nan'):.3f} s "
            f"(max {max(wakes, default=float('nan')):.3f}); "
            f"asleep: host RSS {host / 2**30 if host else float('nan'):.2f} GiB, GPU in use "
            f"{gpu_asleep / 2**30 if gpu_asleep else float('nan'):.2f} GiB (awake "
            f"{gpu_awake / 2**30 if gpu_awake else float('nan'):.2f} GiB)"
        )


def _abba(rd: RunDir, servers: list[str], point_ids: list[str]) -> None:
    for point_id in point_ids:
        visits: dict[int, str] = {}
        for server in servers:
            path = rd.bench_rows(server, point_id)
            if not path.is_file():
                continue
            for row in read_request_rows(path):
                if row.interleave_seq is not None and not row.warmup:
                    visits[row.interleave_seq] = f"{row.interleave_side}({server} w{row.wave})"
        if visits:
            print(f"  {point_id}: " + " ".join(visits[s] for s in sorted(visits)))


def _waves(rd: RunDir, servers: list[str], point_ids: list[str]) -> None:
    for server in servers:
        for point_id in point_ids:
            record_path, rows_path = rd.bench_point(server, point_id), rd.bench_rows(server, point_id)
            if not (record_path.is_file() and rows_path.is_file()):
                continue
            units = wave_units(load_point_record(record_path).point, read_request_columns(rows_path))
            rates = [r for r in (decode_rate([u]) for u in units) if r is not None]
            spread = statistics.stdev(rates) / statistics.mean(rates) if len(rates) > 1 else float("nan")
            print(f"  waves {server} {point_id}: decode tok/s {' '.join(f'{r:.0f}' for r in rates)} (CV {spread:.1%})")


def _evals(rd: RunDir, servers: list[str]) -> None:
    for server in servers:
        for results in sorted((rd.root / "evals" / server).glob("*/results.json")):
            r = read_json(results)
            seq = (r.get("extra") or {}).get("sequential") or {}
            where = (
                f"look {seq['looks_run']}{' (stopped)' if seq.get('stopped') else ''}, "
                f"{'in turns' if seq.get('in_turns') else 'lockstep' if seq.get('lockstep_with') else 'alone'}"
                if seq
                else "no looks"
            )
            print(f"  eval {server} {results.parent.name}: {r['n_items']} items, {r['score']:.1f} points ({where})")


def show(rd: RunDir, label: str) -> None:
    summary = derive_summary(rd)
    print(f"== {label}: {rd.root}")
    _swaps(rd)
    servers = sorted(p.name for p in (rd.root / "bench").iterdir()) if (rd.root / "bench").is_dir() else []
    point_ids = sorted({p.point_id for p in summary.bench.points})
    _abba(rd, servers, point_ids)
    _waves(rd, servers, point_ids)
    _evals(rd, sorted(p.name for p in (rd.root / "evals").iterdir()) if (rd.root / "evals").is_dir() else [])
    for c in summary.bench.comparisons:
        if c.metric == "decode_tok_s":
            ci = f"{c.ci_low:.4f}-{c.ci_high:.4f}" if c.ci_low is not None and c.ci_high is not None else "-"
            print(
                f"  {c.point_id}: {c.candidate} {c.candidate_value:.1f} / {c.baseline} {c.baseline_value:.1f} tok/s"
                f" = {c.ratio:.4f}, 95% CI {ci} (width {c.ci_high - c.ci_low if c.ci_high and c.ci_low else 0:.4f};"
                f" resampled {c.units})"
            )
    for v in summary.evals.verdicts:
        said = f"{v.sequential.decision} at {v.sequential.items_used} items" if v.sequential else v.verdict
        print(f"  verdict {v.task} {v.candidate} vs {v.baseline}: {said} (d {v.d:+.2f}, margin {v.margin})")
    for w in summary.bench.wake_effects:
        ci = f"{w.ci_low:.3f}-{w.ci_high:.3f}" if w.ci_low is not None and w.ci_high is not None else "-"
        ratio = f"{w.ratio:.3f}" if w.ratio is not None else "-"
        print(
            f"  wake-up check {w.server} {w.point_id}: woken/continued waves {w.woken_waves}/{w.continued_waves},"
            f" decode ratio {ratio}, CI {ci}, flagged {w.flagged}"
        )
    t = summary.time_to_verdict
    if t is None:
        print("  time to verdict: no server recorded a start")
        return
    print("  time to verdict (s):   wall  starting measuring evaluating swapping checking   idle  measuring share")
    for who, spent in [("run", t.run), *((f"{s.server}", s) for s in t.servers)]:
        share = f"{spent.measuring_share:.1%}" if spent.measuring_share is not None else "-"
        print(
            f"    {who:<18} {spent.wall_s:7.1f} {spent.starting_s:8.1f} {spent.measuring_s:9.1f}"
            f" {spent.evaluating_s:10.1f} {spent.swapping_s:8.1f} {spent.checking_s:8.1f} {spent.idle_s:6.1f}  {share}"
        )


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "benchmarks/results/interleave-smollm2"
    for run in sorted(d for d in root.iterdir() if (d / "plan.yaml").is_file()):
        show(RunDir(run), run.name)


if __name__ == "__main__":
    main()
