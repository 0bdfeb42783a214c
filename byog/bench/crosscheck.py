"""Agreement with ``vllm bench serve``: run byog's client and vLLM's against the same server.

Both tools get the same ISL, OSL, concurrency and number of prompts (closed loop); each run is
bracketed by ``/metrics`` snapshots so each tool's token totals can be checked against what the
server says it processed. Used by ``bench/fidelity.py`` (figures) and an integration test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from byog.bench import metrics as m
from byog.bench import server_metrics as sm


def _metrics_text(base_url: str) -> str:
    import httpx

    return httpx.get(f"{base_url}/metrics", timeout=30.0).text


def run_byog(base_url: str, model: str, tokenizer: str | None, *, isl: int, osl: int, concurrency: int,
             num_prompts: int, seed: int = 0) -> dict[str, Any]:
    """byog's closed loop; medians from the per-request formulas, totals from the server's usage."""
    from byog.bench.prompts import ServerTokenizer, build_prompts
    from byog.bench.workloads import run_point
    from byog.plans.expand import BenchPoint
    from byog.plans.model import RandomPrompts

    point = BenchPoint(point_id=f"fidelity-c{concurrency}-isl{isl}-osl{osl}-s{seed}", workload="fidelity",
                       kind="concurrency", concurrency=concurrency, isl=isl, osl=osl, prompts=RandomPrompts(),
                       num_prompts=num_prompts, prompt_seed=seed)
    tok = ServerTokenizer(base_url, model)
    try:
        prompts = build_prompts(kind="random", dataset=None, api="completions", isl=isl, count=num_prompts, seed=seed,
                                point_id=point.point_id, server=tok, tokenizer_path=tokenizer)
    finally:
        tok.close()
    before = _metrics_text(base_url)
    run = run_point(base_url, model, point, prompts)
    deltas = sm.counter_deltas(before, _metrics_text(base_url))
    traces = [r.trace() for r in run.records]
    errors = [r.error for r in run.records if r.error]
    return {
        "tool": "byog",
        "median_tpot_s": m.percentile([x for x in map(m.tpot_s, traces) if x is not None], 50),
        "median_ttft_s": m.percentile([x for x in map(m.ttft_s, traces) if x is not None], 50),
        "median_itl_s": m.percentile(m.pooled_itl_s(traces), 50),
        "output_tok_s": m.output_tok_s(traces),
        "completed": len(traces) - len(errors),
        "errors": errors[:3],
        "total_output_tokens": sum(r.n_out for r in run.records),
        "total_input_tokens": sum(r.n_in or 0 for r in run.records),
        "server_generation_tokens": deltas.get(sm.GENERATION_TOKENS),
        "server_prompt_tokens": deltas.get(sm.PROMPT_TOKENS),
        "client_cpu_share": run.cpu_share,
        "client_loop_lag_p99_s": run.loop_lag_p99_s,
    }


def run_vllm_bench_serve(base_url: str, model: str, tokenizer: str, *, isl: int, osl: int, concurrency: int,
                         num_prompts: int, seed: int = 0, same_body: bool = True) -> dict[str, Any]:
    """``vllm bench serve`` (the installed vLLM, through byog's entry point) with the same settings.

    ``same_body``: also send byog's ``min_tokens`` and ``continuous_usage_stats`` (through
    ``--extra-body``) so the server does identical work for both tools and any difference is the
    client's. Without it vLLM sends only ``max_tokens`` + ``ignore_eos`` + ``include_usage``.
    """
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "byog.images.vllm_entry", "bench", "serve", "--backend", "openai",
               "--base-url", base_url, "--model", model, "--tokenizer", tokenizer, "--dataset-name", "random",
               "--random-input-len", str(isl), "--random-output-len", str(osl), "--num-prompts", str(num_prompts),
               "--max-concurrency", str(concurrency), "--ignore-eos", "--temperature", "0", "--seed", str(seed),
               "--disable-tqdm", "--save-result", "--result-dir", out, "--result-filename", "r.json"]
        if same_body:
            cmd += ["--extra-body", json.dumps({"min_tokens": osl, "stream_options": {"include_usage": True, "continuous_usage_stats": True}})]
        before = _metrics_text(base_url)
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        after = _metrics_text(base_url)
        if proc.returncode != 0:
            raise RuntimeError(f"vllm bench serve failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        result = json.loads((Path(out) / "r.json").read_text())
    deltas = sm.counter_deltas(before, after)
    return {
        "tool": "vllm bench serve",
        "median_tpot_s": result["median_tpot_ms"] / 1e3,
        "median_ttft_s": result["median_ttft_ms"] / 1e3,
        "median_itl_s": result["median_itl_ms"] / 1e3,
        "output_tok_s": result["output_throughput"],
        "completed": result["completed"],
        "errors": [e for e in result.get("errors", []) if e][:3],
        "total_output_tokens": result["total_output_tokens"],
        "total_input_tokens": result["total_input_tokens"],
        "server_generation_tokens": deltas.get(sm.GENERATION_TOKENS),
        "server_prompt_tokens": deltas.get(sm.PROMPT_TOKENS),
        "command": " ".join(cmd[1:]).replace(out, "OUT"),
    }
