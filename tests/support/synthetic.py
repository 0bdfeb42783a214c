"""A synthetic run directory with made-up numbers in the real file formats.

For tests and ``benchmarks/verify_timing.py``: every file is written through the same models and
writers the real pipeline uses (``byog.schemas.bench.write_request_rows``, ``PointRecord``, ``EvalItemRow``,
``EvalResults``), so verify, pack and report see exactly the shapes a real run produces, minus
a vLLM server. Deterministic for a given seed.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from byog import __version__
from byog.analysis.strata import ASSIGNMENT, server_batch
from byog.analysis.summary import derive_summary
from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.report.markdown import render_report
from byog.schemas.bench import RequestRow, write_request_rows
from byog.schemas.evals import write_eval_items

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
    eval_accuracy: float = 0.4  # chance an item is right (0: a task at its floor, as with dummy weights)
    launches: int = 1  # plan `launches`: launch r >= 2 gets its own points (and its own random stream)
    aa_pair: bool = False
    launch_sd: float = 0.0  # launch-to-launch spread of TPOT (relative), for launches r >= 2


def plan_yaml(spec: SyntheticSpec) -> str:
    sizes = ", ".join(str(b) for b in spec.batch_sizes)
    return (
        "name: synthetic\n"
        "description: made-up numbers in the real file formats (tests, verify benchmark)\n"
        "model:\n  path: builtin:smollm2-135m-instruct\n  max_model_len: 4096\n"
        'servers:\n  candidate:\n    runtime: local\n  baseline:\n    runtime: local\n    args: ["--enforce-eager"]\n'
        "baseline: baseline\n"
        "workloads:\n"
        f"  - kind: batch\n    name: decode\n    batch_sizes: [{sizes}]\n    isl: [{spec.isl}]\n    osl: [{spec.osl}]\n"
        f"    warmup_waves: {spec.warmup_waves}\n    waves: {spec.waves}\n"
        "evals:\n  - task: gsm8k\n"
        f"    limit: {spec.eval_items}\n    passes: 1\n    margin: 3.0\n"
        f"seeds: [{spec.seed}]\n"
        + (f"launches: {spec.launches}\n" if spec.launches != 1 else "")
        + ("aa_pair: true\n" if spec.aa_pair else "")
    )


def synthetic_rows(rng: random.Random, point: Any, tpot_s: float) -> list[Any]:
    rows = []
    t = 10 * NS
    index = 0
    for wave in range(point.warmup_waves + point.wave_cap):  # the plan's waves (a stopping point's cap)
        for _ in range(point.batch_size):
            ttft_ns = int(rng.uniform(0.02, 0.03) * NS)
            times = [t + ttft_ns]
            for _ in range(point.osl - 1):
                times.append(times[-1] + int(tpot_s * rng.uniform(0.9, 1.1) * NS))
            rows.append(
                RequestRow(
                    request_index=index,
                    wave=wave,
                    warmup=wave < point.warmup_waves,
                    expected_n_in=point.isl,
                    t_send_ns=t,
                    chunk_t_ns=times,
                    chunk_tokens=[1] * point.osl,
                    n_in=point.isl,
                    n_out=point.osl,
                )
            )
            index += 1
        t = max(r.chunk_t_ns[-1] for r in rows[-point.batch_size :]) + NS // 100
    return rows


def write_eval_files(
    run_dir: RunDir, server: str, spec: SyntheticSpec, rng: random.Random, task: str = "gsm8k"
) -> None:
    rows = []
    for i in range(spec.eval_items):
        correct = rng.random() < spec.eval_accuracy
        rows.append(
            {
                "item_id": f"test:{i}",
                "item_sha256": hashlib.sha256(f"item {i}".encode()).hexdigest(),
                "pass_index": 0,
                "seed": spec.seed,
                "extracted_answer": str(i if correct else i + 1),
                "target": str(i),
                "score": 1.0 if correct else 0.0,
                "n_output_tokens": 100 + i,
                "bin": None,
            }
        )
    write_eval_items(run_dir.eval_items(server, task), rows)
    score = 100.0 * sum(r["score"] for r in rows) / len(rows)
    write_eval_results(run_dir, server, task, n_rows=len(rows), score=score, seed=spec.seed, limit=spec.eval_items)


def write_eval_results(
    run_dir: RunDir,
    server: str,
    task: str,
    *,
    n_rows: int,
    score: float,
    seed: int,
    limit: int,
    version: str = "synthetic",
    dataset_id: str = "synthetic",
    gated: bool | None = None,
    answer_extraction: str | None = None,
) -> None:
    """results.json of ``task`` on ``server`` in the real format: one greedy pass of ``n_rows`` items.

    The one builder of a synthetic eval result, so a format change is made once; ``gated`` None
    leaves the task's gated flag out, as a task record without one has it (and so for ``answer_extraction``).
    """
    task_record: dict[str, Any] = {"name": task, "version": version}
    if gated is not None:
        task_record["gated"] = gated
    if answer_extraction is not None:
        task_record["answer_extraction"] = answer_extraction
    atomic_write_json(
        run_dir.eval_results(server, task),
        {
            "schema_version": 1,
            "server": server,
            "task": task_record,
            "data": {"source": "generated", "dataset_id": dataset_id, "revision": None, "label": "generated"},
            "endpoint": {"base_url": "http://127.0.0.1:1", "model": "synthetic"},
            "sampling": {"passes": 1, "seeds": [seed], "temperature": 0.0, "do_sample": False},
            "runner": {"name": "synthetic"},
            "limit": limit,
            "n_items": n_rows,
            "n_rows": n_rows,
            "score": score,
            "stderr": None,
            "pass_scores": [score],
            "wall_s": 1.0,
        },
    )


def _metrics(tokens: float, steps: float) -> str:
    """vLLM's /metrics text with its output-token and engine-step counters at these values."""
    return (
        "# TYPE vllm:generation_tokens_total counter\n"
        f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {tokens}\n'
        "# TYPE vllm:iteration_tokens_total histogram\n"
        f'vllm:iteration_tokens_total_count{{engine="0",model_name="m"}} {steps}\n'
    )


def record_server_batch(run_dir: RunDir, server: str, task: str, counts: dict[int, tuple[float, float] | None]) -> None:
    """results.json's ``extra.strata`` points, rule and ``server_batch`` as the runner records them: per
    operating point, ``server_batch`` of the server's /metrics text before and after the stratum.
    ``counts``: (output tokens, engine steps) over each stratum; None: the server served no /metrics."""
    path = run_dir.eval_results(server, task)
    results = json.loads(path.read_text()) if path.is_file() else {}
    texts = {
        p: (None, None) if c is None else (_metrics(7.0, 3.0), _metrics(7.0 + c[0], 3.0 + c[1]))
        for p, c in counts.items()
    }
    batch = {str(p): server_batch(*texts[p]) for p in sorted(counts)}
    results.setdefault("extra", {})["strata"] = {
        "points": sorted(counts),
        "assignment": ASSIGNMENT,
        "server_batch": batch,
    }
    atomic_write_json(path, results)


def write_point(run_dir: RunDir, server: str, point: Any, rows: list[Any]) -> None:
    """One complete bench point in the real file formats: raw rows, then the point record."""
    write_request_rows(run_dir.bench_rows(server, point.point_id), rows)
    atomic_write_json(
        run_dir.bench_point(server, point.point_id),
        {
            "schema_version": 1,
            "server": server,
            "point": point.model_dump(mode="json"),
            "prompts_label": "random-ids",
            "status": "complete",
            "started_at": "2026-01-01T00:00:00+00:00",
            "duration_s": (rows[-1].chunk_t_ns[-1] - rows[0].t_send_ns) / NS,
            "t_start_ns": rows[0].t_send_ns,
            "t_end_ns": rows[-1].chunk_t_ns[-1],
            "counter_deltas": {},
            "byog_version": __version__,
        },
    )


def make_run_dir(root: Path, spec: SyntheticSpec = SyntheticSpec(), *, plan_text: str | None = None) -> RunDir:
    """Write a complete run directory (raw files, then summary.json and report.md) under ``root``.

    ``plan_text``: another plan than ``plan_yaml(spec)`` (same workload keys), e.g. one server only.
    """
    run_dir = RunDir(root)
    text = plan_text or plan_yaml(spec)
    plan = parse_plan(text, "synthetic plan")
    atomic_write_text(run_dir.plan_yaml, text)
    atomic_write_json(
        run_dir.env_json,
        {
            "schema_version": 1,
            "os": "Linux (synthetic)",
            "python": "3.11",
            "cpu": "synthetic CPU",
            "cpu_count": 2,
            "packages": {"byog": __version__, "vllm": "synthetic"},
            "gpus": [],
        },
    )
    rng = random.Random(spec.seed)
    for server in plan.servers:
        tpot = spec.tpot_s / (spec.candidate_speedup if server != plan.baseline else 1.0)
        argv = ["vllm", "serve", "synthetic", *plan.servers[server].args]
        atomic_write_json(
            run_dir.server_record(server),
            {
                "name": server,
                "runtime": "local",
                "argv": argv,
                "image": None,
                "version": {"version": "synthetic"},
                "models": {"data": [{"id": "synthetic", "max_model_len": 4096}]},
            },
        )
        atomic_write_text(
            run_dir.server_log(server),
            "".join(f"INFO synthetic log line {i} of {server}\n" for i in range(spec.log_lines)),
        )
        for point in expand_plan(plan):
            write_point(run_dir, server, point, synthetic_rows(rng, point, tpot * (1 + 0.05 * (point.batch_size - 1))))
        write_eval_files(run_dir, server, spec, rng)
    for server in plan.servers:  # launches 2..R after everything else, so launch 1 keeps its numbers
        for launch in range(2, plan.launches_of(server) + 1):
            launch_rng = random.Random(spec.seed * 1000 + launch * 10 + sorted(plan.servers).index(server))
            shift = 1 + spec.launch_sd * launch_rng.gauss(0, 1)
            tpot = spec.tpot_s / (spec.candidate_speedup if server != plan.baseline else 1.0) * shift
            for point in [p for p in expand_plan(plan) if plan.measured_on(p.workload, server, launch)]:
                write_point(
                    run_dir.for_launch(launch),
                    server,
                    point,
                    synthetic_rows(launch_rng, point, tpot * (1 + 0.05 * (point.batch_size - 1))),
                )
    summary = derive_summary(run_dir)
    atomic_write_json(run_dir.summary_json, summary.to_json())
    atomic_write_text(run_dir.report_md, render_report(run_dir, summary))
    return run_dir


def saturate_client(run_dir: RunDir, server: str, point_id: str) -> None:
    """Make one point invalid the way a real run does: its client used more CPU than allowed."""
    path = run_dir.bench_point(server, point_id)
    record = json.loads(path.read_text())
    record["schema_version"] = 2
    record["client"] = {
        "cpu_share": 0.97,
        "loop_lag_p99_s": 0.0,
        "loop_lag_max_s": 0.0,
        "cpu_share_limit": 0.8,
        "loop_lag_share_of_itl": 0.5,
        "loop_lag_floor_s": 0.002,
    }
    atomic_write_json(path, record)
