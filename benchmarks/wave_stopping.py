"""The stopping rule (docs/statistics.md §8) re-run over the waves of committed CPU runs.

    python benchmarks/wave_stopping.py

Inputs (real CPU vLLM, SmolLM2-135M-Instruct, the smoke profile's decode points at B = 1 and 4):
- ``benchmarks/results/aa-cpu.json``: 32 launches of the smoke profile's eager baseline, ISL 32,
  OSL 64, 3 measured waves each (tokens in each wave's decode window and its length);
- ``benchmarks/results/launches-cpu``: 3 launches of 2 servers, ISL 32, OSL 32, 4 measured waves.

For each launch and point: h_k (the relative half-width of the 95% wave bootstrap CI of decode
tok/s after k waves, ``wave_stopping.half_width``), then, per target and minimum, where the rule
stops within the recorded waves ("beyond": it would measure on, up to its cap). The A/A verdict
(aa-cpu, launches dealt into pairs 1 v 2, 3 v 4, ...: does the wave bootstrap CI of the decode
tok/s ratio cover 1) is compared between all recorded waves and the waves the rule kept, where
both sides stopped within them. Prints the tables; nothing is timed.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from byog.analysis.bench_summary import CI_LEVEL, Unit, bootstrap_ratios, interval, stat_for, wave_units
from byog.analysis.request_columns import read_request_columns
from byog.analysis.validity import load_point_record
from byog.analysis.wave_stopping import Rule, decide, half_width
from byog.core.paths import RunDir

RESULTS = Path(__file__).parent / "results"
TARGETS = (0.01, 0.02, 0.05, 0.10, 0.20)
MINIMA = (2, 3)

Runs = dict[tuple[str, int, str], list[Unit]]  # (server, launch, point) -> measured waves


def _unit(tokens: int, window_ns: int) -> Unit:
    empty = np.empty(0)
    return Unit(empty, empty, empty, (0, window_ns), tokens, 0.0, tokens)


def aa_runs() -> Runs:
    data = json.loads((RESULTS / "aa-cpu.json").read_text())
    return {
        (launch["server"], launch["launch"], point): [_unit(t, w) for t, w in waves]
        for launch in data["launches"]
        for point, waves in launch["points"].items()
    }


def launches_runs() -> Runs:
    rd = RunDir(RESULTS / "launches-cpu")
    out: Runs = {}
    for server in ("candidate", "baseline"):
        for launch in (1, 2, 3):
            folder = rd.for_launch(launch)
            for point_id in folder.bench_point_ids(server):
                record = load_point_record(folder.bench_point(server, point_id))
                out[(server, launch, point_id)] = wave_units(
                    record.point, read_request_columns(folder.bench_rows(server, point_id))
                )
    return out


def widths(key: tuple[str, int, str], units: list[Unit]) -> list[float | None]:
    seed = [1234, zlib.crc32(f"{key[2]}/{key[0]}/{key[1]}/stopping".encode())]
    return [half_width(units[:k], seed) for k in range(1, len(units) + 1)]


def stop_table(name: str, runs: Runs) -> None:
    h = {key: widths(key, units) for key, units in runs.items()}
    recorded = {len(u) for u in runs.values()}
    print(f"\n{name}: {len(runs)} launch-points, {'/'.join(map(str, sorted(recorded)))} recorded waves each")
    last = [w[-1] for w in h.values() if w[-1] is not None]
    second = [w[1] for w in h.values() if len(w) > 1 and w[1] is not None]
    print(
        f"h after 2 waves: median {np.median(second):.1%} (min {min(second):.1%}, max {max(second):.1%}); "
        f"after all recorded: median {np.median(last):.1%} (min {min(last):.1%}, max {max(last):.1%})"
    )
    print("| target | min waves | stopped at the minimum | stopped later (within recorded) | beyond recorded | waves |")
    print("|---:|---:|---:|---:|---:|---|")
    for target in TARGETS:
        for minimum in MINIMA:
            at_min = later = beyond = used = fixed = 0
            for w in h.values():
                rule = Rule(target, minimum, len(w))
                decided = decide(Rule(target, minimum, 10**6), w)  # where it stops, if within the recorded waves
                fixed += len(w)
                if decided is None:
                    beyond += 1
                    used += decide(rule, w)[0]  # type: ignore[index]  # capped at what was recorded
                    continue
                used += decided[0]
                at_min += decided[0] == minimum
                later += decided[0] > minimum
            print(
                f"| {target:.0%} | {minimum} | {at_min} | {later} | {beyond} | {used} of {fixed} recorded "
                f"({fixed - used} saved{', more beyond: the cap' if beyond else ''}) |"
            )


def aa_verdicts(runs: Runs) -> None:
    """A/A pairs (launch 2k-1 of a, 2k of b ...): the wave bootstrap ratio CI covers 1, on all
    recorded waves and on the waves the rule kept (both sides stopped within them)."""
    print("\naa-cpu A/A verdict (95% wave bootstrap CI of decode tok/s covers 1) on the kept waves")
    print("| target | min waves | pairs where both stopped within 3 waves | same verdict | waves kept |")
    print("|---:|---:|---:|---:|---|")
    keys = sorted(runs, key=lambda k: (k[2], k[1], k[0]))
    points = sorted({k[2] for k in keys})
    launches = sorted({(k[0], k[1]) for k in keys}, key=lambda sl: (sl[1], sl[0]))
    pairs = [(launches[i], launches[i + 1]) for i in range(0, len(launches) - 1, 2)]
    stat = stat_for("decode_tok_s", "batch")

    def covers(cand: list[Unit], base: list[Unit], seed: list[int]) -> bool | None:
        ratios = bootstrap_ratios(cand, base, stat, seed, metric="decode_tok_s")
        low, high = interval(ratios, CI_LEVEL) if ratios else (None, None)
        return None if low is None or high is None else low <= 1.0 <= high

    for target in TARGETS:
        for minimum in MINIMA:
            both = same = kept = total = 0
            for point in points:
                for (sa, la), (sb, lb) in pairs:
                    a, b = runs[(sa, la, point)], runs[(sb, lb, point)]
                    da = decide(Rule(target, minimum, 10**6), widths((sa, la, point), a))
                    db = decide(Rule(target, minimum, 10**6), widths((sb, lb, point), b))
                    if da is None or db is None:
                        continue
                    seed = [1234, zlib.crc32(f"{point}/{la}/{lb}".encode())]
                    both += 1
                    kept += da[0] + db[0]
                    total += len(a) + len(b)
                    same += covers(a[: da[0]], b[: db[0]], seed) == covers(a, b, seed)
            print(f"| {target:.0%} | {minimum} | {both} of {len(points) * len(pairs)} | {same} | {kept} of {total} |")


def main() -> None:
    aa = aa_runs()
    stop_table("aa-cpu (smoke's eager baseline, OSL 64)", aa)
    stop_table("launches-cpu (float32 vs bfloat16, OSL 32)", launches_runs())
    aa_verdicts(aa)


if __name__ == "__main__":
    main()
