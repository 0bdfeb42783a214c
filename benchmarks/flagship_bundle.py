"""The flagship's bundle at its real size: a synthetic run directory of the kimi-k3-gb300 plan's
exact shape, packed and verified, with the bundle's size by part and by file kind, pack and verify
wall and CPU time, and peak memory.

    nice python benchmarks/flagship_bundle.py [--tier standard full] [--scale 1.0] [--save]
    python benchmarks/flagship_bundle.py --reprint     # the committed figures (CI re-prints, never re-runs)

Shape: every batch point of the tier (``byog.plans`` expansion, servers as the plan gives them)
on every launch of its server (``Plan.launches_of``: launch r >= 2 in ``RunDir.for_launch(r)``,
with its own server record, as the pipeline writes it), every wave (warm-up included) and every
token (OSL; a synthetic-acceptance server's chunks carry its acceptance length). Timing is
resampled from the committed H200 rows of the same batch size (benchmarks/results/h200/tp1/
byog-isl1, OSL 256): a request's TTFT is a real request's, its gaps real requests' gap sequences
laid end to end until OSL is reached. Eval items: every task on every
server it runs on, items x passes rows (the registry's sizes, ``byog.plans.tiers.eval_items``).
Left out: the agentic interactivity points (16 sessions at C=1: ~10^5 tokens, under 1% of the
rows) and numerics records (the plan has no numerics block). ``--scale`` multiplies OSL and eval
rows (tests/unit/benchmarks/test_flagship_bundle.py packs and verifies a scaled-down one, its
smoke tier given the profile's two launches). A bundle over the 25 MB budget is packed in signed
parts (``byog.bundles.parts``): the figures list each part.

Building, packing and verifying each run in a child process of this script, so the CPU seconds and
peak memory (max RSS of the step and of the children it waits for: verify's content checks run in
a forked child) are the step's alone; Linux carries a parent's RSS high-water mark into a child
it starts, so a step's peak is never below the launcher's own (printed with the figures). One
process at a time: run it niced on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import resolve_plan_path
from byog.plans.tiers import apply_tier, eval_items, tiered_plan_yaml
from byog.schemas.bench import BenchPoint, RequestRow, read_request_rows
from byog.schemas.plan import Plan

REPO = Path(__file__).resolve().parents[1]
H200_ROWS = REPO / "benchmarks" / "results" / "h200" / "tp1" / "byog-isl1" / "bench" / "endpoint"
RESULTS = REPO / "benchmarks" / "results" / "flagship-bundle.json"
PROFILE = "kimi-k3-gb300"
NS = 1_000_000_000

# --- timing pool ---------------------------------------------------------------------------------


class TimingPool:
    """Real TTFTs and inter-chunk gap sequences (ns) of the committed H200 rows, by batch size."""

    def __init__(self, folder: Path = H200_ROWS) -> None:
        self.ttft: dict[int, list[int]] = {}
        self.gaps: dict[int, list[np.ndarray]] = {}
        for path in sorted(folder.glob("decode-b*-isl1-osl256.parquet")):
            b = int(path.name.split("-")[1][1:])
            rows = [r for r in read_request_rows(path) if r.ok and len(r.chunk_t_ns) > 1]
            self.ttft[b] = [r.chunk_t_ns[0] - r.t_send_ns for r in rows]
            self.gaps[b] = [np.diff(np.array(r.chunk_t_ns, dtype=np.int64)) for r in rows]

    def nearest(self, b: int) -> int:
        return min(self.gaps, key=lambda have: (abs(have - b), have))

    def request(self, rng: random.Random, b: int, chunks: int) -> tuple[int, np.ndarray]:
        """(TTFT, chunks - 1 gaps) of one synthetic request at batch size ``b``."""
        b = self.nearest(b)
        parts, have = [], 0
        while have < chunks - 1:
            seq = rng.choice(self.gaps[b])
            parts.append(seq)
            have += seq.size
        gaps = np.concatenate(parts)[: chunks - 1] if parts else np.zeros(0, dtype=np.int64)
        return rng.choice(self.ttft[b]), gaps


# --- the run directory ------------------------------------------------------------------------------


def _tokens_per_chunk(plan: Plan, server: str) -> int:
    spec = plan.servers[server].speculative_config or {}
    length = spec.get("synthetic_acceptance_length")
    return int(length) if isinstance(length, (int, float)) and length >= 1 else 1


def _point_rows(pool: TimingPool, rng: random.Random, point: BenchPoint, osl: int, k: int) -> list[RequestRow]:
    assert point.batch_size is not None
    rows: list[RequestRow] = []
    t = 10 * NS
    chunks = max(1, -(-osl // k))
    for wave in range(point.warmup_waves + point.waves):
        ends = []
        for _ in range(point.batch_size):
            ttft, gaps = pool.request(rng, point.batch_size, chunks)
            times = t + ttft + np.concatenate([[0], np.cumsum(gaps)])
            tokens = [k] * (chunks - 1) + [osl - k * (chunks - 1)]
            rows.append(
                RequestRow(
                    request_index=len(rows),
                    wave=wave,
                    warmup=wave < point.warmup_waves,
                    expected_n_in=point.isl,
                    t_send_ns=t,
                    chunk_t_ns=times.tolist(),
                    chunk_tokens=tokens,
                    n_in=point.isl,
                    n_out=osl,
                )
            )
            ends.append(int(times[-1]))
        t = max(ends) + NS // 100
    return rows


def build_run(root: Path, tier: str, scale: float, seed: int = 1234, launches: int | None = None) -> dict[str, Any]:
    """Write the synthetic run directory (raw files, summary.json); returns its shape.

    ``launches``: the plan's ``launches`` instead of the tier's (the smoke tier launches once)."""
    from byog.analysis.summary import derive_summary
    from tests.support.synthetic import SyntheticSpec, write_eval_files, write_point

    label, text = resolve_plan_path(PROFILE)
    from byog.plans.load import parse_plan

    plan = apply_tier(parse_plan(text, label), tier)
    if launches is not None:
        plan = plan.model_copy(update={"launches": launches})
    run_dir = RunDir(root)
    atomic_write_text(run_dir.plan_yaml, tiered_plan_yaml(plan))
    atomic_write_json(
        run_dir.env_json, {"schema_version": 1, "os": "Linux (synthetic)", "cpu": "synthetic", "gpus": []}
    )
    pool, rng = TimingPool(), random.Random(seed)
    points = measured = tokens = chunks = requests = items = 0
    for server in plan.servers:
        for launch in range(1, plan.launches_of(server) + 1):
            atomic_write_json(
                run_dir.for_launch(launch).server_record(server),
                {
                    "name": server,
                    "runtime": "slurm",
                    "argv": ["vllm", "serve", "kimi-k3", f"--served-model-name={server}"],
                },
            )
    for point in expand_plan(plan):
        if point.kind != "batch":
            continue
        osl = max(2, round(point.osl * scale))
        for server in point.servers:
            k = _tokens_per_chunk(plan, server)
            points += 1
            for launch in range(1, plan.launches_of(server) + 1):
                rows = _point_rows(pool, rng, point.model_copy(update={"osl": osl}), osl, k)
                write_point(run_dir.for_launch(launch), server, point, rows)
                measured += 1
                requests += len(rows)
                tokens += sum(r.n_out for r in rows)
                chunks += sum(len(r.chunk_t_ns) for r in rows)
    for spec in plan.evals:
        n = max(1, round(eval_items(spec) * spec.passes * scale))
        for server in spec.servers or list(plan.servers):
            write_eval_files(run_dir, server, SyntheticSpec(eval_items=n, seed=seed), rng, spec.task)
            items += n
    atomic_write_json(run_dir.summary_json, derive_summary(run_dir).to_json())
    return {
        "points": points,
        "launches": {server: plan.launches_of(server) for server in plan.servers},
        "points_measured": measured,
        "requests": requests,
        "output_tokens": tokens,
        "chunks": chunks,
        "eval_rows": items,
    }


# --- pack and verify, each measured in a child process ------------------------------------------------------


def _kind(name: str) -> str:
    if name.startswith("bench/"):
        return "bench rows (parquet)" if name.endswith(".parquet") else "bench point records (json)"
    if name.startswith("evals/"):
        return "eval items (parquet)" if name.endswith(".parquet") else "eval results (json)"
    if name.startswith("plots/"):
        return "plots"
    return "other (plan, env, summary, report, manifest, servers)"


def step_pack(run: Path, key: Path) -> dict[str, Any]:
    import io
    import tarfile

    from byog.bundles.finalize import seal_and_pack
    from byog.bundles.sign import SigningKey

    packed = seal_and_pack(RunDir(run), run.parent / "bundle.tar.gz", key=SigningKey(key, "benchmark"), plots=True)
    data = packed.parts[1:]  # a multi-part bundle: parts 1..N are byte ranges of the one archive
    archive = b"".join(p.read_bytes() for p in data) if data else packed.bundle.read_bytes()
    by_kind: dict[str, int] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            by_kind[_kind(member.name)] = by_kind.get(_kind(member.name), 0) + member.size
    return {
        "bundle": str(packed.bundle),
        "parts": [p.stat().st_size for p in data] if data else [packed.size_bytes],
        "part_manifest_bytes": packed.bundle.stat().st_size if data else None,
        "members_by_kind": by_kind,
        "compressed": len(packed.compressed),
    }


def step_verify(bundle: Path, allowed: Path) -> dict[str, Any]:
    from byog.bundles.verify import verify_bundle_set

    report = verify_bundle_set([bundle], allowed_signers=allowed)
    return {"verified": report.verified, "failures": report.failures}


def _measured(args: Sequence[str]) -> dict[str, Any]:
    """Run one step in a child; its result with wall, CPU (user + sys, its children included) and peak RSS."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    result["wall_s"] = round(wall, 2)
    return result


def _child_main(step: str, a: Path, b: Path) -> None:
    if step == "build":
        tier, scale = str(b).split(":")
        result = build_run(a, tier, float(scale))
    else:
        result = step_pack(a, b) if step == "pack" else step_verify(a, b)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    result["cpu_s"] = round(me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, 2)
    result["peak_rss_mib"] = round(max(me.ru_maxrss, kids.ru_maxrss) / 1024, 1)
    print(json.dumps(result))


def measure(tier: str, scale: float, folder: Path) -> dict[str, Any]:
    from tests.support.keys import allowed_signers, make_key

    key, public = make_key(folder, "flagship")
    allowed = allowed_signers(folder / "allowed_signers", [("flagship@example.com", public)])
    run = folder / "run"
    shape = _measured(["--step", "build", str(run), f"{tier}:{scale}"])
    pack = _measured(["--step", "pack", str(run), str(key.path)])
    verify = _measured(["--step", "verify", pack.pop("bundle"), str(allowed)])
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"tier": tier, "scale": scale, "shape": shape, "pack": pack, "verify": verify, "launcher_rss_mib": floor}


# --- printing ----------------------------------------------------------------------------------------------


def _launches(shape: dict[str, Any]) -> str:
    counts = sorted(set(shape["launches"].values()))
    return " or ".join(str(n) for n in counts) + f" launch(es) of each of {len(shape['launches'])} servers"


def render(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        s, p, v = r["shape"], r["pack"], r["verify"]
        total = sum(p["parts"])
        lines += [
            f"## {PROFILE}, {r['tier']} tier (scale {r['scale']:g})",
            f"{s['points']} bench points on {_launches(s)}: {s['points_measured']} measured, "
            f"{s['requests']:,} requests, {s['output_tokens']:,} output tokens in "
            f"{s['chunks']:,} chunks, {s['eval_rows']:,} eval rows; built in {s['wall_s']} s "
            f"(launcher's RSS, every step's floor: {r['launcher_rss_mib']:.0f} MiB)",
            f"bundle: {total / 1e6:.2f} MB in {len(p['parts'])} part(s): "
            + ", ".join(f"{size / 1e6:.2f} MB" for size in p["parts"])
            + (
                f" (and the signed part manifest, {p['part_manifest_bytes']:,} bytes)"
                if p["part_manifest_bytes"]
                else ""
            ),
            "",
            "| file kind | bytes in the bundle (before the outer gzip) | per output token |",
            "|---|---|---|",
        ]
        for kind, size in sorted(p["members_by_kind"].items(), key=lambda item: -item[1]):
            lines.append(f"| {kind} | {size / 1e6:.2f} MB | {size / max(s['output_tokens'], 1):.3f} B |")
        lines += [
            "",
            "| step | wall s | CPU s | peak RSS MiB | outcome |",
            "|---|---|---|---|---|",
            f"| pack | {p['wall_s']} | {p['cpu_s']} | {p['peak_rss_mib']} | "
            f"{p['compressed']} files re-encoded to fit |",
            f"| verify | {v['wall_s']} | {v['cpu_s']} | {v['peak_rss_mib']} | "
            + ("verified" if v["verified"] else "FAILED: " + "; ".join(v["failures"]))
            + " |",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", nargs="+", default=["standard", "full"], choices=["smoke", "standard", "full"])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--save", action="store_true", help=f"write the figures to {RESULTS.relative_to(REPO)}")
    parser.add_argument("--reprint", action="store_true", help="print the committed figures")
    parser.add_argument("--step", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        _child_main(args.step[0], Path(args.step[1]), Path(args.step[2]))
        return
    if args.reprint:
        print(render(json.loads(RESULTS.read_text())["results"]))
        return
    results = []
    for tier in args.tier:
        with tempfile.TemporaryDirectory() as folder:
            results.append(measure(tier, args.scale, Path(folder)))
        print(render(results[-1:]), flush=True)
    if args.save:
        atomic_write_json(RESULTS, {"command": " ".join(["python", *sys.argv]), "results": results})


if __name__ == "__main__":
    main()
