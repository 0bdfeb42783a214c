"""TP2 on one node against TP2 across two nodes (vLLM native launcher, Ray): TPOT for B = 1..64.

Runs on a host with two GPUs (the lent H200 pair). Every server is a plan server launched by the
runtime `byog run` picks: ``single`` (one `vllm serve`, CUDA_VISIBLE_DEVICES=0,1) by the local
runtime; ``native`` and ``ray`` (``nodes: 2, gpus_per_node: 1``) by the cluster runtime as two local
nodes of one GPU each (CUDA_VISIBLE_DEVICES 0 and 1). Each is benched with byog's batch sweep (B concurrent requests,
ISL/OSL fixed, one warm-up wave, three measured) and stopped before the next starts; TPOT is byog's bench summary
(P50 over every measured request's (t_last - t_first) / (n_out - 1)).

    python3 benchmarks/multinode_bench.py --model /tmp/models/llama3-8b-shape --out $OUT/multinode \
        [--configs single,native,ray] [--batch 1,2,4,8,16,32,64] [--isl 512] [--osl 256] [--args '...']

Writes OUT/multinode.json (one row per server x B, plus each server's start-up time and record)
and OUT/runs/ (the raw run directory: points, rows, server.json and logs of every node).
``benchmarks/multinode_table.py OUT/multinode.json`` prints the side-by-side table.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import traceback
from pathlib import Path

from rich.console import Console

from byog.analysis.bench_summary import summarize_bench
from byog.bench.sweep import run_bench_for_server
from byog.cli.console_reporter import ConsoleReporter
from byog.core.paths import RunDir
from byog.pipeline.runtimes import runtime_for
from byog.schemas.plan import BatchWorkload, ModelSpec, Plan, server_config
from byog.schemas.server import PreparedModel

NAMES = {"single": "tp2-1node", "native": "tp2-2nodes-native", "ray": "tp2-2nodes-ray"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a local model directory (dummy weights are fine)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--configs", default="single,native,ray")
    parser.add_argument("--batch", default="1,2,4,8,16,32,64")
    parser.add_argument("--isl", type=int, default=512)
    parser.add_argument("--osl", type=int, default=256)
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument(
        "--args",
        default="--load-format dummy --gpu-memory-utilization 0.85",
        help="extra `vllm serve` arguments for every server",
    )
    parser.add_argument("--ray-args", default="", help="extra `ray start` arguments on every node")
    parser.add_argument("--startup-timeout", type=float, default=900.0)
    opts = parser.parse_args()

    configs = [c for c in opts.configs.split(",") if c]
    batches = [int(b) for b in opts.batch.split(",")]
    model = PreparedModel(
        path=opts.model, served_name=Path(opts.model).name, tokenizer=opts.model, max_model_len=opts.max_model_len
    )
    common = dict(tensor_parallel_size=2, args=shlex.split(opts.args), startup_timeout_s=opts.startup_timeout)
    variants = {
        "single": server_config(**common, env={"CUDA_VISIBLE_DEVICES": "0,1"}),
        "native": server_config(**common, nodes=2, gpus_per_node=1, launcher="native"),
        "ray": server_config(**common, nodes=2, gpus_per_node=1, launcher="ray", ray_args=shlex.split(opts.ray_args)),
    }
    plan = Plan(
        name="tp2-one-node-vs-two",
        model=ModelSpec(path=opts.model, max_model_len=opts.max_model_len),
        servers={NAMES[c]: variants[c] for c in configs},
        baseline=NAMES[configs[0]],
        workloads=[
            BatchWorkload(name="decode", batch_sizes=batches, isl=[opts.isl], osl=[opts.osl], warmup_waves=1, waves=3)
        ],
    )
    opts.out.mkdir(parents=True, exist_ok=True)
    rd = RunDir(opts.out / "runs")
    console = Console(stderr=True)
    servers: dict[str, dict] = {}
    for config in configs:
        name = NAMES[config]
        t0 = time.monotonic()
        console.print(f"[bold]{name}[/]: starting")
        try:  # the runtime `byog run` would pick: local for one node, the cluster runtime for two
            running = runtime_for(plan.servers[name]).launch(name, plan.servers[name], model, rd.server_dir(name))
        except Exception as err:  # one launcher failing must not cost the others' numbers
            servers[name] = {
                "error": f"{type(err).__name__}: {err}"[-3000:],
                "traceback": traceback.format_exc()[-3000:],
            }
            console.print(f"[red]{name} did not start[/]: {str(err)[-1500:]}")
            continue
        servers[name] = {
            "ready_after_s": round(time.monotonic() - t0, 1),
            "tp_served": running.endpoint.tensor_parallel_size,
        }
        try:
            result = run_bench_for_server(plan, name, running, rd, ConsoleReporter(console))
            servers[name]["bench"] = {k: result[k] for k in ("run", "failed", "restarts", "aborted")}
        finally:
            running.stop()
        record = rd.server_record(name)
        servers[name]["server_json"] = json.loads(record.read_text()) if record.is_file() else None
    summary = summarize_bench(rd, plan)
    rows = []
    for entry in summary.model_dump(mode="json")["points"]:
        metrics = entry.get("metrics") or {}
        rows.append(
            {
                "server": entry["server"],
                "point_id": entry["point_id"],
                "batch_size": entry["batch_size"],
                "tpot_p50_ms": _ms((metrics.get("tpot_s") or {}).get("p50")),
                "ttft_p50_ms": _ms((metrics.get("ttft_s") or {}).get("p50")),
                "decode_tok_s": metrics.get("decode_tok_s"),
                "valid": entry["valid"],
                "invalid_reasons": entry["invalid_reasons"],
                "n_requests": entry["n_requests"],
            }
        )
    out = {
        "model": opts.model,
        "isl": opts.isl,
        "osl": opts.osl,
        "args": opts.args,
        "configs": configs,
        "names": {c: NAMES[c] for c in configs},
        "servers": servers,
        "rows": rows,
    }
    (opts.out / "multinode.json").write_text(json.dumps(out, indent=1, sort_keys=True, default=str))
    console.print(f"wrote {opts.out / 'multinode.json'}")
    return 0 if all("error" not in s for s in servers.values()) else 1


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 3)


if __name__ == "__main__":
    sys.exit(main())
