"""Print issue 13's long-context decode step-time matrix of a run directory (default: the one-H200,
TP1 run in benchmarks/results/h200-longctx-tp1/), re-derived from its raw rows and point records.

    python benchmarks/h200_longctx_table.py [RUN_DIR]

The summary is re-derived by ``byog.analysis.summary.derive_summary`` (the one home of the
formulas) and compared with the committed summary.json. One matrix over both workloads: rows B,
columns ISL; each cell is decode step time in ms (``decode_step_s``) / tok/s/user P50 / TTFT P50
in s. A starred cell is a point byog flagged invalid; its reasons are listed under the table.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis import energy
from byog.analysis.summary import derive_summary
from byog.core.paths import RunDir
from byog.schemas.bench import PointSummary

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
    print(f"\n{len(invalid)} of {len(points)} points invalid.\n")
    _conditions(points)
    return 0


def _conditions(points: list[PointSummary]) -> None:
    """Each point's GPU conditions, then how much they move between neighbouring points (same ISL,
    twice the batch): the spread the A/B thresholds of ``byog.analysis.energy`` are set against."""
    print("| point | SwPowerCap share | SM clock mean MHz | mean power W | mJ/token | other throttling |")
    print("|---|---:|---:|---:|---:|---|")
    for p in points:
        power = p.metrics.power if p.metrics else None
        if power is None or not power.available:
            continue
        share = energy.cap_share(power)
        clock = power.sm_clock_mhz.mean if power.sm_clock_mhz else None
        others = {k: v for k, v in (power.throttle or {}).items() if k != energy.POWER_CAP}
        print(
            f"| {p.point_id} | {share:.0%} | {clock:.0f} | {power.mean_power_w:.0f} | "
            f"{(power.j_per_token or 0) * 1e3:.1f} | {', '.join(f'{k} {v:.0%}' for k, v in others.items()) or 'none'} |"
        )
    by_isl: dict[int, list[PointSummary]] = {}
    for p in points:
        if p.metrics and p.metrics.power and p.metrics.power.available:
            by_isl.setdefault(p.isl, []).append(p)
    clock_gaps, cap_gaps = [], []
    for group in by_isl.values():
        group.sort(key=lambda p: p.batch_size)
        for a, b in itertools.pairwise(group):
            pa, pb = a.metrics.power, b.metrics.power  # type: ignore[union-attr]
            clock_gaps.append(abs(pb.sm_clock_mhz.mean / pa.sm_clock_mhz.mean - 1))  # type: ignore[union-attr,operator]
            cap_gaps.append(abs((energy.cap_share(pb) or 0) - (energy.cap_share(pa) or 0)))
    if clock_gaps:
        print(
            f"\nneighbouring points (same ISL, batch doubled), {len(clock_gaps)} pairs: "
            f"mean SM clock differs by at most {max(clock_gaps):.1%}, "
            f"SwPowerCap share by at most {max(cap_gaps) * 100:.0f} points; an A/B is flagged over"
            f" {energy.MAX_SM_CLOCK_GAP:.1%} or {energy.MAX_CAP_SHARE_GAP * 100:.0f} points"
        )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
