"""A synthetic run directory with made-up numbers in the real file formats.

For tests and ``bench/verify_timing.py``: every file is written through the same models and
writers the real pipeline uses (``byog.bench.rows.write_rows``, ``PointRecord``, ``EvalItemRow``,
``EvalResults``), so verify, pack and report see exactly the shapes a real run produces, minus
a vLLM server. Deterministic for a given seed.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from byog import __version__
from byog.bundles.rundir import RunDir
from byog.ioutil import atomic_write_bytes, atomic_write_json, atomic_write_text

NS = 1_000_000_000


@dataclass(frozen=True)
class SyntheticSpec:
    batch_sizes: tuple[int, ...] = (1, 2, 4)
    isl: int = 32
    osl: int = 64
    warmup_waves: int = 1
    waves: int = 3
    eval_items: int = 20
    tpot_s: float = 0.020  # baseline time per output token at B=1
    candidate_speedup: float = 1.25
    seed: int = 1234
    log_lines: int = 50


def plan_yaml(spec: SyntheticSpec) -> str:
    sizes = ", ".join(str(b) for b in spec.batch_sizes)
    return (
        "name: synthetic\n"
        "description: made-up numbers in the real file formats (tests, verify benchmark)\n"
        "model:\n  path: builtin:smollm2-135m-instruct\n  max_model_len: 4096\n"
        "servers:\n  candidate:\n    runtime: local\n  baseline:\n    runtime: local\n    args: [\"--enforce-eager\"]\n"
        "baseline: baseline\n"
        "workloads:\n"
        f"  - kind: batch\n    name: decode\n    batch_sizes: [{sizes}]\n    isl: [{spec.isl}]\n    osl: [{spec.osl}]\n"
        f"    warmup_waves: {spec.warmup_waves}\n    waves: {spec.waves}\n"
        "evals:\n  - task: gsm8k\n"
        f"    limit: {spec.eval_items}\n    passes: 1\n    margin: 3.0\n"
        f"seeds: [{spec.seed}]\n"
    )


def _rows(rng: random.Random, point: Any, tpot_s: float) -> list[Any]:
    from byog.bench.client import RequestRecord

    rows = []
    t = 10 * NS
    index = 0
    for wave in range(point.warmup_waves + point.waves):
        for _ in range(point.batch_size):
            ttft_ns = int(rng.uniform(0.02, 0.03) * NS)
            times = [t + ttft_ns]
            for _ in range(point.osl - 1):
                times.append(times[-1] + int(tpot_s * rng.uniform(0.9, 1.1) * NS))
            rows.append(
                RequestRecord(
                    request_index=index, wave=wave, warmup=wave < point.warmup_waves, expected_n_in=point.isl,
                    t_send_ns=t, chunk_t_ns=times, chunk_tokens=[1] * point.osl, n_in=point.isl, n_out=point.osl,
                )
            )
            index += 1
        t = max(r.chunk_t_ns[-1] for r in rows[-point.batch_size:]) + NS // 100
    return rows


def _eval_files(run_dir: RunDir, server: str, spec: SyntheticSpec, rng: random.Random) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from byog.schemas.evals import ITEM_COLUMNS

    rows = []
    for i in range(spec.eval_items):
        correct = rng.random() < 0.4
        rows.append({
            "item_id": f"test:{i}", "item_sha256": hashlib.sha256(f"item {i}".encode()).hexdigest(),
            "pass_index": 0, "seed": spec.seed, "extracted_answer": str(i if correct else i + 1), "target": str(i),
            "score": 1.0 if correct else 0.0, "n_output_tokens": 100 + i, "bin": None,
        })
    table = pa.Table.from_pylist(rows).select(list(ITEM_COLUMNS))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    atomic_write_bytes(run_dir.eval_items(server, "gsm8k"), sink.getvalue().to_pybytes())
    score = 100.0 * sum(r["score"] for r in rows) / len(rows)
    atomic_write_json(run_dir.eval_results(server, "gsm8k"), {
        "schema_version": 1, "server": server,
        "task": {"name": "gsm8k", "version": "synthetic"},
        "data": {"source": "generated", "dataset_id": "synthetic", "revision": None, "label": "generated"},
        "endpoint": {"base_url": "http://127.0.0.1:1", "model": "synthetic"},
        "sampling": {"passes": 1, "seeds": [spec.seed], "temperature": 0.0, "do_sample": False},
        "runner": {"name": "synthetic"}, "limit": spec.eval_items, "n_items": len(rows), "n_rows": len(rows),
        "score": score, "stderr": None, "pass_scores": [score], "wall_s": 1.0,
    })


def write_point(run_dir: RunDir, server: str, point: Any, rows: list[Any]) -> None:
    """One complete bench point in the real file formats: raw rows, then the point record."""
    from byog.bench.rows import write_rows

    write_rows(run_dir.bench_rows(server, point.point_id), rows)
    atomic_write_json(run_dir.bench_point(server, point.point_id), {
        "schema_version": 1, "server": server, "point": point.model_dump(mode="json"),
        "prompts_label": "random-ids", "status": "complete", "started_at": "2026-01-01T00:00:00+00:00",
        "duration_s": (rows[-1].chunk_t_ns[-1] - rows[0].t_send_ns) / NS,
        "t_start_ns": rows[0].t_send_ns, "t_end_ns": rows[-1].chunk_t_ns[-1],
        "counter_deltas": {}, "byog_version": __version__,
    })


def make_run_dir(
    root: Path,
    spec: SyntheticSpec = SyntheticSpec(),
    *,
    derive: Callable[[RunDir], dict[str, Any]] | None = None,
) -> RunDir:
    """Write a complete run directory (raw files, then summary.json and report.md) under ``root``."""
    from byog.bundles.report import render_report
    from byog.plans.expand import expand_plan
    from byog.plans.load import parse_plan

    run_dir = RunDir(root)
    text = plan_yaml(spec)
    plan = parse_plan(text, "synthetic plan")
    atomic_write_text(run_dir.plan_yaml, text)
    atomic_write_json(run_dir.env_json, {
        "schema_version": 1, "os": "Linux (synthetic)", "python": "3.11", "cpu": "synthetic CPU", "cpu_count": 2,
        "packages": {"byog": __version__, "vllm": "synthetic"}, "gpus": [],
    })
    rng = random.Random(spec.seed)
    for server in plan.servers:
        tpot = spec.tpot_s / (spec.candidate_speedup if server != plan.baseline else 1.0)
        argv = ["vllm", "serve", "synthetic", *plan.servers[server].args]
        atomic_write_json(run_dir.server_record(server), {
            "name": server, "runtime": "local", "argv": argv, "image": None,
            "version": {"version": "synthetic"}, "models": {"data": [{"id": "synthetic", "max_model_len": 4096}]},
        })
        atomic_write_text(run_dir.server_log(server), "".join(f"INFO synthetic log line {i} of {server}\n" for i in range(spec.log_lines)))
        for point in expand_plan(plan):
            write_point(run_dir, server, point, _rows(rng, point, tpot * (1 + 0.05 * (point.batch_size - 1))))
        _eval_files(run_dir, server, spec, rng)
    if derive is None:
        from byog.bundles.summary import derive_summary as derive
    summary = derive(run_dir)
    atomic_write_text(run_dir.summary_json, json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n")
    atomic_write_text(run_dir.report_md, render_report(run_dir, summary))
    return run_dir
