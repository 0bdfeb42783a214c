"""The wake effect of interleaved runs: each side's waves right after a wake against its steady ones.

    python benchmarks/wake_effect.py [RUN_DIR ...]   # default: the H100 study and the H200 interleaved run

Per run, side and batch point: the wake warm-up waves each wake ran before measuring (server.json
``sleep_mode.swaps[].warmup_waves``; a record from before byog had wake warm-up has none: 0), the woken
and continued waves, the pooled ratio woken / continued decode tok/s with its 95% bootstrap CI and flag
(``summary.bench.wake_effects``, derived again from the rows by ``byog.analysis.summary``), and the
spread of each woken wave over the median continued wave (``bench_summary.woken_wave_ratios``). Every
visit of these runs is one wave, so a woken wave is the first measured wave after a wake and a
continued one the wave after it, with no swap between. The output is committed as
benchmarks/results/wake-effect.md; docs/interleave.md sizes ``wake_warmup_waves`` from it.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.bench_summary import launch_units, woken_wave_ratios
from byog.analysis.summary import derive_summary, plan_of
from byog.core.io import read_json
from byog.core.paths import RunDir

DEFAULT_RUNS = [
    REPO / "benchmarks/results/gpu-session-h100/study-abba",
    REPO / "benchmarks/results/h200-interleave/interleaved",
]


def _warmups(rd: RunDir, server: str) -> str:
    """The wake warm-up waves its swaps recorded: one number, a range, or 0 for a record without the field."""
    sleep = read_json(rd.server_dir(server) / "server.json").get("sleep_mode") or {}
    counts = sorted({int(s.get("warmup_waves") or 0) for s in sleep.get("swaps") or [] if s.get("seq", 0) > 1})
    if not counts:
        return "—"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"


def _fingerprinted(rd: RunDir, server: str) -> str:
    sleep = read_json(rd.server_dir(server) / "server.json").get("sleep_mode") or {}
    return "yes" if sleep.get("fingerprints") else "no"


def table(root: Path) -> list[str]:
    rd = RunDir(root)
    plan = plan_of(rd)
    summary = derive_summary(rd)
    points, units = launch_units(rd, plan)
    lines = [
        f"### {root.relative_to(REPO) if root.is_relative_to(REPO) else root}",
        "",
        "| Server | Point | Wake warm-up waves | Fingerprint after wake | Woken/continued | Ratio | 95% CI | Flagged "
        "| Each woken wave / median continued: min, median, max |",
        "|---|---|---:|---|---:|---:|---|---|---|",
    ]
    for w in summary.bench.wake_effects:
        launches = units.get((w.server, w.point_id)) or []
        ratios = woken_wave_ratios(launches[0], points[w.point_id].kind) if len(launches) == 1 else []
        spread = (
            f"{min(ratios):.3f}, {statistics.median(ratios):.3f}, {max(ratios):.3f} ({len(ratios)} waves)"
            if ratios
            else "—"
        )
        ci = f"{w.ci_low:.3f}–{w.ci_high:.3f}" if w.ci_low is not None and w.ci_high is not None else "—"
        lines.append(
            f"| {w.server} | {w.point_id} | {_warmups(rd, w.server)} | {_fingerprinted(rd, w.server)} "
            f"| {w.woken_waves}/{w.continued_waves} | {'—' if w.ratio is None else f'{w.ratio:.3f}'} | {ci} "
            f"| {w.flagged} | {spread} |"
        )
    return [*lines, ""]


def main(argv: list[str]) -> int:
    roots = [Path(a).resolve() for a in argv] or DEFAULT_RUNS
    print("## Wake effect: decode tok/s of the first wave after a wake over the side's continued waves\n")
    for root in roots:
        print("\n".join(table(root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
