"""Re-print the issue-13 H200 results (kimi mirror, long context, power) from the committed raw files.

    python benchmarks/h200_spec_longctx.py                       # every imported run, as report sections
    python benchmarks/h200_spec_longctx.py --json                # the per-point numbers as JSON
    python benchmarks/h200_spec_longctx.py import RUN.tar.xz --tag mirror   # device tarball -> committed layout

Every number is re-derived from the raw rows and point records by ``byog.analysis.summary``
(the one home of the formulas) and printed by ``byog.report.sections.decode`` (the report's own
sections): B x TP / B x ISL matrices of tok/s/user and step time, acceptance with CIs and the
cross-check ratio, J/token beside tok/s. The runs live in ``benchmarks/results/h200-spec/<tag>/``
(README there); ``import`` keeps what re-deriving needs (plan.yaml, env.json, server.json,
summary.json, report.md, bench/*) and drops the server logs' bulk, /metrics snapshots and the bundle.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.summary import derive_summary
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from byog.report.sections import decode

RESULTS = REPO / "benchmarks" / "results" / "h200-spec"
KEEP_TOP = ("plan.yaml", "env.json", "summary.json", "report.md", "nvidia-smi-q.txt")
LOG_TAIL_BYTES = 20_000


def _tp(run_dir: RunDir) -> dict[str, int]:
    plan = parse_plan(run_dir.plan_yaml.read_text(encoding="utf-8"), str(run_dir.plan_yaml))
    return {name: c.tensor_parallel_size for name, c in plan.servers.items()}


def runs() -> list[Path]:
    return sorted(p for p in RESULTS.iterdir() if (p / "plan.yaml").is_file()) if RESULTS.is_dir() else []


def reprint(as_json: bool) -> int:
    found = runs()
    if not found:
        print(f"no runs under {RESULTS} yet: import a device tarball first (see --help)")
        return 1
    out = {}
    for folder in found:
        run_dir = RunDir(folder)
        summary = derive_summary(run_dir)
        committed = (
            json.loads(run_dir.summary_json.read_text(encoding="utf-8")) if run_dir.summary_json.is_file() else None
        )
        same = committed == summary.to_json() if committed is not None else None
        if as_json:
            out[folder.name] = [p.model_dump(mode="json") for p in summary.bench.points]
            continue
        print(f"# {folder.name} ({summary.plan.name}); re-derived summary equals the committed one: {same}\n")
        tp = _tp(run_dir)
        print("\n".join([*decode.matrices(summary, tp), *decode.speculation(summary), *decode.energy(summary)]))
        for p in summary.bench.points:
            if not p.valid:
                print(f"- {p.server} {p.point_id}: NOT valid: {'; '.join(p.invalid_reasons)}")
        print()
    if as_json:
        print(json.dumps(out, indent=1, sort_keys=True))
    return 0


def import_run(tarball: Path, tag: str) -> int:
    """Unpack a device tarball (spec_longctx.sh pack) into benchmarks/results/h200-spec/<tag>/."""
    dest = RESULTS / tag
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(tarball) as tar:
            # the "data" filter where this Python has it (3.11.4+); the tarball is byog's own device output
            tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        (root,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for name in KEEP_TOP:
            if (root / name).is_file():
                shutil.copy2(root / name, dest / name)
        if (root / "bench").is_dir():
            shutil.copytree(root / "bench", dest / "bench")
        for server in sorted((root / "servers").glob("*")) if (root / "servers").is_dir() else []:
            (dest / "servers" / server.name).mkdir(parents=True)
            if (server / "server.json").is_file():
                shutil.copy2(server / "server.json", dest / "servers" / server.name / "server.json")
            log = server / "server.log"
            if log.is_file():  # the tail: start-up facts and any error, not megabytes of access log
                data = log.read_bytes()[-LOG_TAIL_BYTES:]
                (dest / "servers" / server.name / "server.log.tail").write_bytes(data)
        for log in root.glob("*.log"):
            (dest / log.name).write_bytes(log.read_bytes()[-LOG_TAIL_BYTES:])
    print(f"imported {tarball} -> {dest}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    sub = parser.add_subparsers(dest="cmd")
    imp = sub.add_parser("import")
    imp.add_argument("tarball", type=Path)
    imp.add_argument("--tag", required=True)
    args = parser.parse_args()
    if args.cmd == "import":
        return import_run(args.tarball, args.tag)
    return reprint(args.json)


if __name__ == "__main__":
    raise SystemExit(main())
