"""A/A coverage of byog's perf CIs on real CPU vLLM launches, before (the old CIs) and after (the new).

    nice -n 10 byog run benchmarks/plans/aa-cpu.yaml --run-dir RUN         # L launches of 2 identical servers
    python benchmarks/aa_coverage.py collect RUN [RUN ...] benchmarks/results/aa-cpu.json   # the raw figures, once
    python benchmarks/aa_coverage.py [benchmarks/results/aa-cpu.json]            # re-print the table (CI)

Both servers of benchmarks/plans/aa-cpu.yaml are the same configuration (the smoke profile's eager
baseline), so every launch is a draw of one server and the launches are exchangeable: they are
dealt, in the order they ran, into disjoint A/A runs, candidate and baseline alternating (R = 1:
launches 1 v 2, 3 v 4, ...; R = 3: 1,3,5 v 2,4,6, ...). Each run is judged at each batch point by
its decode tok/s ratio (true value 1) with:

- old: the CIs byog printed before (R = 1: the wave bootstrap; R = 3: the hierarchical bootstrap);
- new: the CIs byog prints now (``bench_summary._ratio_cis``: R = 1: the same wave bootstrap,
  labelled "waves of one launch"; R = 3: the launch t interval);
- new + calibration (R = 1 only): the launch t interval with the launch variance of an A/A
  calibration made of the launches of the *other* R = 1 runs (never the run's own), as
  ``byog run --calibration`` would use it.

The raw figures (per launch, point and wave: tokens in the decode window, window in ns) are what
the committed JSON holds; the table is recomputed from them with byog's own CI code.
"""

from __future__ import annotations

import json
import math
import sys
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis import perf_equivalence
from byog.analysis.bench_summary import Unit, _ratio_cis, launch_units, stat_for
from byog.core.paths import RunDir
from byog.plans.load import parse_plan

DEFAULT = REPO / "benchmarks" / "results" / "aa-cpu.json"
METRIC = "decode_tok_s"
SEED = 1234
BATCH = SimpleNamespace(kind="batch")
DRAWN_RUNS = 20  # the count of A/A runs per R on the H200


def collect(runs: list[Path], out: Path) -> None:
    """Every complete launch of the runs, in the order they ran. An A/A run of the H200 routine
    (benchmarks/gpu/h200-session.sh) is one `byog run` per batch of identical endpoint servers:
    each server there is one launch."""
    launches: list[dict] = []
    name = ""
    for run in runs:
        name = _collect_one(run, launches)
    doc = {"plan": name, "metric": METRIC, "where": _where(runs[0]), "launches": launches}
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{len(launches)} complete launches -> {out}")


def _where(run: Path) -> str:
    env = json.loads((run / "env.json").read_text(encoding="utf-8")) if (run / "env.json").is_file() else {}
    gpus = (env.get("gpu") or {}).get("gpus") or []
    return f"{gpus[0].get('name', 'GPU')} CUDA vLLM" if gpus else "CPU vLLM"


def _collect_one(run: Path, launches: list[dict]) -> str:
    rd = RunDir(run)
    plan = parse_plan(rd.plan_yaml.read_text(encoding="utf-8"), str(rd.plan_yaml))
    points, units = launch_units(rd, plan)
    for launch in range(1, plan.launches + 1):
        for server in plan.servers:
            figures = {}
            for point_id in points:
                got = units.get((server, point_id)) or []
                if len(got) >= launch:
                    figures[point_id] = [
                        [u.tokens, u.window[1] - u.window[0] if u.window else 0] for u in got[launch - 1]
                    ]
            if len(figures) == len(points):  # a launch counts once every point of it is measured
                launches.append({"run": run.name, "server": server, "launch": launch, "points": figures})
    return plan.name


def _units(figures: list[list[int]]) -> list[Unit]:
    empty = np.empty(0)
    return [Unit(empty, empty, empty, (0, window), tokens, 0.0, tokens) for tokens, window in figures]


def _old_ci(cand: list[list[Unit]], base: list[list[Unit]], seed: list[int]) -> tuple[float, float] | None:
    """The CI byog printed before: the wave bootstrap (R = 1), the hierarchical bootstrap (R >= 2)."""
    if len(cand) == 1 and len(base) == 1:
        ci = _ratio_cis(cand, base, BATCH, METRIC, seed, None).ci95  # unchanged at R = 1
        return None if ci[0] is None or ci[1] is None else (ci[0], ci[1])
    return perf_equivalence.hierarchical_ratio_ci(cand, base, stat_for(METRIC, "batch"), seed).ci95  # type: ignore[arg-type]


def _new_ci(
    cand: list[list[Unit]], base: list[list[Unit]], seed: list[int], prior: perf_equivalence.LaunchVariance | None
) -> tuple[float, float] | None:
    ci = _ratio_cis(cand, base, BATCH, METRIC, seed, prior).ci95
    return None if ci[0] is None or ci[1] is None else (ci[0], ci[1])


def _spread(launches: list[list[Unit]]) -> tuple[float, int]:
    stat = stat_for(METRIC, "batch")
    z = [math.log(v) for v in (stat(x) for x in launches) if v]
    mean = sum(z) / len(z)
    return sum((v - mean) ** 2 for v in z), len(z) - 1


def _covers(ci: tuple[float, float] | None) -> bool:
    return ci is not None and ci[0] <= 1.0 <= ci[1]


def _row(runs: list[list[dict]], r: int, point_id: str, label: str = "") -> list[str]:
    """One row of the table: the runs' coverage by each method and the median CI widths."""
    old, new, cal, widths = [], [], [], []
    for k, run in enumerate(runs):
        cand = [_units(x["points"][point_id]) for x in run[0::2]]
        base = [_units(x["points"][point_id]) for x in run[1::2]]
        seed = [SEED, zlib.crc32(f"{point_id}/{r}/{k}".encode())]
        o, n = _old_ci(cand, base, seed), _new_ci(cand, base, seed, None)
        old.append(_covers(o))
        new.append(_covers(n))
        if o and n:
            widths.append((o[1] / o[0] - 1, n[1] / n[0] - 1))
        if r == 1:  # calibration: every launch of the other runs, as one A/A of that many launches
            # each launch once, never one of this run's (drawn runs share launches)
            pool = {id(x): x for j, other in enumerate(runs) if j != k for x in other}
            mine = {id(x) for x in run}
            others = [_units(x["points"][point_id]) for key, x in pool.items() if key not in mine]
            ss, df = _spread(others)
            if df >= 2:
                cal.append(_covers(_new_ci(cand, base, seed, perf_equivalence.LaunchVariance(ss / df, df))))
    width = "–"
    if widths:
        width = " / ".join(f"{100 * float(np.median([w[i] for w in widths])):.1f}%" for i in (0, 1))
    cells = [str(r), point_id + label, str(len(runs)), f"{sum(old)}/{len(old)}", f"{sum(new)}/{len(new)}"]
    return [*cells, f"{sum(cal)}/{len(cal)}" if cal else "–", width]


def table(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    launches = doc["launches"]
    point_ids = sorted(launches[0]["points"]) if launches else []
    where = doc.get("where", "CPU vLLM")
    print(f"A/A coverage on {where}: plan {doc['plan']}, {len(launches)} launches of one configuration, {METRIC}")
    header = ["R per side", "point", "runs", "old 95% CI covers 1", "new 95% CI covers 1", "new + calibration"]
    print("| " + " | ".join([*header, "median CI width old / new"]) + " |")
    print("|---:|---|---:|---:|---:|---:|---|")
    for r in (1, 2, 3):
        runs = [launches[i : i + 2 * r] for i in range(0, len(launches) - 2 * r + 1, 2 * r)]
        for point_id in point_ids if runs else []:
            print("| " + " | ".join(_row(runs, r, point_id)) + " |")
    drawn = [r for r in (1, 3) if 0 < len(launches) // (2 * r) < DRAWN_RUNS and len(launches) >= 2 * r]
    if drawn:
        print(
            f"\nFewer than {DRAWN_RUNS} disjoint runs: {DRAWN_RUNS} runs drawn at random (seed {SEED}), each from "
            "2R distinct launches of the pool; runs share launches, so their coverages are not independent"
        )
        for r in drawn:
            rng = np.random.default_rng([SEED, r])
            picks = [rng.choice(len(launches), 2 * r, replace=False) for _ in range(DRAWN_RUNS)]
            runs = [[launches[int(i)] for i in pick] for pick in picks]
            for point_id in point_ids:
                print("| " + " | ".join(_row(runs, r, point_id, " (drawn)")) + " |")
    stat = stat_for(METRIC, "batch")
    for point_id in point_ids:
        groups = [[v for v in (stat([u]) for u in _units(x["points"][point_id])) if v] for x in launches]
        share = perf_equivalence.between_launch_share(groups)
        if share is not None:
            level = float(np.mean([v for g in groups for v in g]))
            print(
                f"{point_id}: between-launch share {share.share:.2f} over {share.launches} launches (launch SD "
                f"{100 * math.sqrt(share.between_var) / level:.1f}%, "
                f"wave SD {100 * math.sqrt(share.within_var) / level:.1f}%)"
            )


def main(argv: list[str]) -> int:
    if argv[:1] == ["collect"] and len(argv) >= 3:
        collect([Path(a) for a in argv[1:-1]], Path(argv[-1]))
        return 0
    table(Path(argv[0]) if argv else DEFAULT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
