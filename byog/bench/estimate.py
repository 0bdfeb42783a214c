"""``byog plan``: the expanded matrix, each server's launch command, and a wall-time estimate.

The estimate is deliberately simple: per server, start-up + sum over points of
(requests in sequence) x (TTFT + OSL x TPOT). Guesses are used unless an earlier run directory
is given, in which case its measured start-up time and TPOT/TTFT (per point when the same point
was measured, else the server's median) replace them.
"""

from __future__ import annotations

import math
import shlex
import statistics
from pathlib import Path
from typing import Any

from byog.plans.expand import BenchPoint, expand_plan, unimplemented_workloads
from byog.plans.model import Plan

STARTUP_GUESS_S = 120.0
TPOT_GUESS_S = 0.030  # CPU vLLM + SmolLM2-135M at batch 1 decodes ~38 tok/s
TTFT_GUESS_S = 0.100


def launch_command(plan: Plan, server: str) -> str:
    """The command that starts this server (from the runtimes' own argv builder)."""
    from byog.images.launch import local_vllm_argv, server_env, vllm_serve_args
    from byog.images.runtime import PreparedModel

    config = plan.servers[server]
    model = PreparedModel(path=plan.model.path, served_name=plan.model.served_name or plan.model.path,
                          tokenizer=plan.model.tokenizer or plan.model.path, max_model_len=plan.model.max_model_len)
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(server_env(config).items()))
    if config.runtime == "endpoint":
        return f"(already running at {config.url}; byog launches nothing)"
    if config.runtime == "docker":
        args = vllm_serve_args(config, model, "0.0.0.0", 8000)
        return f"docker run --gpus all --ipc host -p 127.0.0.1:PORT:8000 {config.image} vllm serve {shlex.join(args)}"
    argv = local_vllm_argv(config, model, "127.0.0.1", 0)
    return f"{env} {shlex.join(argv)}".strip().replace("--port 0", "--port PORT")


def _measured(run_dir: Path) -> dict[str, Any]:
    """Start-up seconds per server and TPOT/TTFT p50 per (server, point) from an earlier run."""
    from byog.bench.summary import summarize_bench
    from byog.bundles.rundir import RunDir
    from byog.errors import UsageError
    from byog.ioutil import read_json
    from byog.plans.load import parse_plan

    folder = RunDir(run_dir)
    if not folder.plan_yaml.is_file():
        raise UsageError(f"{run_dir} is not a run directory (no plan.yaml)")
    old_plan = parse_plan(folder.plan_yaml.read_text(encoding="utf-8"), str(folder.plan_yaml))
    startup: dict[str, float] = {}
    for server in old_plan.servers:
        record = folder.server_record(server)
        if record.is_file():
            starts = [s.get("ready_after_s") for s in read_json(record).get("starts") or [] if s.get("ready_after_s")]
            if starts:
                startup[server] = float(max(starts))
    per_point: dict[tuple[str, str], tuple[float, float]] = {}
    for p in summarize_bench(folder, old_plan)["points"]:
        metrics = p.get("metrics") or {}
        tpot, ttft = (metrics.get("tpot_s") or {}).get("p50"), (metrics.get("ttft_s") or {}).get("p50")
        if tpot:
            per_point[(p["server"], p["point_id"])] = (tpot, ttft or TTFT_GUESS_S)
    return {"startup": startup, "per_point": per_point}


def point_seconds(point: BenchPoint, tpot_s: float, ttft_s: float) -> float:
    """Requests in sequence x (TTFT + (OSL - 1) x TPOT)."""
    one = ttft_s + max(point.osl - 1, 0) * tpot_s
    if point.kind == "batch":
        return (point.warmup_waves + point.waves) * one
    if point.kind == "concurrency":
        return math.ceil(point.total_requests / (point.concurrency or 1)) * one
    assert point.rate is not None
    return point.num_prompts / point.rate + one


def estimate_plan(plan: Plan, from_run: Path | None = None) -> dict[str, Any]:
    """The matrix, the launch commands and the estimated wall time and GPU-hours of the bench part."""
    measured = _measured(from_run) if from_run else {"startup": {}, "per_point": {}}
    points = expand_plan(plan)
    servers = []
    rows = []
    total_s = 0.0
    gpu_h = 0.0
    for server in plan.servers:
        mine = [p for p in points if server in p.servers]
        server_tpots = [v[0] for (s, _), v in measured["per_point"].items() if s == server]
        fallback_tpot = statistics.median(server_tpots) if server_tpots else TPOT_GUESS_S
        startup = measured["startup"].get(server, STARTUP_GUESS_S)
        seconds = startup
        for p in mine:
            tpot, ttft = measured["per_point"].get((server, p.point_id), (fallback_tpot, TTFT_GUESS_S))
            source = "measured" if (server, p.point_id) in measured["per_point"] else ("server median" if server_tpots else "guess")
            s = point_seconds(p, tpot, ttft)
            seconds += s
            rows.append({"server": server, "point_id": p.point_id, "kind": p.kind, "load": p.load_label, "isl": p.isl,
                         "osl": p.osl, "requests": p.total_requests, "tpot_s": tpot, "estimate_s": s, "source": source})
        config = plan.servers[server]
        gpus = config.tensor_parallel_size * config.data_parallel_size
        servers.append({"server": server, "runtime": config.runtime, "command": launch_command(plan, server),
                        "startup_s": startup, "points": len(mine), "estimate_s": seconds, "gpus": gpus})
        total_s += seconds
        gpu_h += seconds / 3600 * gpus
    return {"plan": plan.name, "points": rows, "servers": servers, "total_estimate_s": total_s, "gpu_hours": gpu_h,
            "from_run": str(from_run) if from_run else None, "not_implemented": unimplemented_workloads(plan),
            "note": "bench only: evals are not in this estimate"}


def render_estimate(console: Any, estimate: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"plan '{estimate['plan']}': {len(estimate['points'])} bench points")
    for column in ("server", "point", "load", "ISL", "OSL", "requests", "TPOT ms", "est. s", "from"):
        table.add_column(column, no_wrap=column in ("server", "point"))
    for r in estimate["points"]:
        table.add_row(r["server"], r["point_id"], r["load"], str(r["isl"]), str(r["osl"]), str(r["requests"]),
                      f"{r['tpot_s'] * 1e3:.1f}", f"{r['estimate_s']:.0f}", r["source"])
    console.print(table)
    for s in estimate["servers"]:
        console.print(f"[bold]{s['server']}[/] ({s['runtime']}, {s['gpus']} GPU(s), start-up {s['startup_s']:.0f} s, "
                      f"{s['estimate_s'] / 60:.1f} min):", highlight=False)
        console.print(f"  {s['command']}", highlight=False, soft_wrap=True)
    for name in estimate["not_implemented"]:
        console.print(f"[yellow]workload '{name}' is not implemented and will not run[/]")
    console.print(f"estimated bench wall time: [bold]{estimate['total_estimate_s'] / 60:.1f} min[/], "
                  f"{estimate['gpu_hours']:.2f} GPU-hours ({estimate['note']})", highlight=False)
