"""How many streamed tokens/s can one client process take? byog's client vs vLLM's bench client.

A loopback OpenAI-compatible SSE server (``byog.bench.ceiling``, its own process) streams
canned one-token chunks as fast as it can, so the client is the bottleneck. We measure:

- byog: the closed-loop workload (C streams, N requests, OSL tokens each) in this process;
  tokens/s = tokens / wall, and the client's CPU time per chunk (its per-chunk overhead);
- the same consumer loop on httpx instead of aiohttp (why byog uses aiohttp);
- ``vllm bench serve`` (through byog.images.vllm_entry) with the same C, N and OSL: its
  reported output token throughput.

    python benchmarks/client_ceiling.py [--concurrency 32] [--num-prompts 128] [--osl 1024] [--tokenizer DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from byog.bench.ceiling import measure_client_ceiling, server_process
from byog.bench.client import request_body


def run_byog(base_url: str, concurrency: int, num_prompts: int, osl: int) -> dict[str, float]:
    """byog's client, as `byog client-ceiling` runs it."""
    return measure_client_ceiling(concurrency, num_prompts, osl, base_url)


async def _httpx_run(base_url: str, concurrency: int, num_prompts: int, osl: int) -> tuple[int, float]:
    """The byog consumer loop on httpx (timestamp per read, usage deltas), for the library choice."""
    from msgspec.json import decode

    tokens = 0
    todo = iter(range(num_prompts))
    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=None)) as client:

        async def worker() -> None:
            nonlocal tokens
            for _ in todo:
                body = request_body("completions", "fake", list(range(300, 332)), osl)
                seen = 0
                async with client.stream("POST", base_url + "/v1/completions", json=body) as response:
                    buffer = b""
                    async for data in response.aiter_raw():
                        _ = time.perf_counter_ns()
                        buffer += data
                        *lines, buffer = buffer.split(b"\n")
                        for line in lines:
                            if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
                                event = decode(line[5:].strip())
                                if event.get("choices"):
                                    seen = event["usage"]["completion_tokens"]
                tokens += seen

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return tokens, time.perf_counter() - start


def run_httpx(base_url: str, concurrency: int, num_prompts: int, osl: int) -> dict[str, float]:
    import uvloop

    tokens, wall = uvloop.run(_httpx_run(base_url, concurrency, num_prompts, osl))
    return {"tok_s": tokens / wall, "tokens": tokens, "wall_s": wall}


def run_vllm(base_url: str, concurrency: int, num_prompts: int, osl: int, tokenizer: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "byog.images.vllm_entry",
            "bench",
            "serve",
            "--backend",
            "openai",
            "--base-url",
            base_url,
            "--model",
            "fake",
            "--tokenizer",
            tokenizer,
            "--dataset-name",
            "random",
            "--random-input-len",
            "32",
            "--random-output-len",
            str(osl),
            "--num-prompts",
            str(num_prompts),
            "--max-concurrency",
            str(concurrency),
            "--ignore-eos",
            "--temperature",
            "0",
            "--disable-tqdm",
            "--save-result",
            "--result-dir",
            out,
            "--result-filename",
            "r.json",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        if proc.returncode != 0:
            raise SystemExit(f"vllm bench serve failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        result = json.loads((Path(out) / "r.json").read_text())
    return {
        "tok_s": result["output_throughput"],
        "tokens": result["total_output_tokens"],
        "wall_s": result["duration"],
        "completed": result["completed"],
    }


def _runs(runs: list[dict[str, float]]) -> str:
    return ", ".join(f"{r['tok_s']:,.0f}" for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--num-prompts", type=int, default=128)
    parser.add_argument("--osl", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--tokenizer", default=None, help="for vllm bench serve's random prompts (default: the built-in SmolLM2)"
    )
    parser.add_argument("--skip-vllm", action="store_true")
    args = parser.parse_args()

    with server_process() as base_url:
        c, n, osl = args.concurrency, args.num_prompts, args.osl
        print(
            f"loopback SSE source: {base_url}; C={c} streams, N={n} requests, OSL={osl} one-token chunks; median of "
            f"{args.repeats}"
        )
        run_byog(base_url, c, min(n, 2 * c), 64)  # warm the connection pool and code paths
        tokenizer = None
        if not args.skip_vllm:
            from byog.images.models import prepare_builtin_smollm2

            tokenizer = args.tokenizer or str(prepare_builtin_smollm2())
        byog_runs, httpx_runs, vllm_runs = [], [], []
        for _ in range(args.repeats):  # interleaved, so a busy moment of the machine hits every client
            byog_runs.append(run_byog(base_url, c, n, osl))
            httpx_runs.append(run_httpx(base_url, c, n, osl))
            if tokenizer:
                vllm_runs.append(run_vllm(base_url, c, n, osl, tokenizer))
        byog_tok_s = statistics.median(r["tok_s"] for r in byog_runs)
        overhead = statistics.median(r["cpu_us_per_chunk"] for r in byog_runs)
        share = statistics.median(r["cpu_share"] for r in byog_runs)
        print(
            f"byog (aiohttp):        {byog_tok_s:12,.0f} tok/s   per-chunk client CPU {overhead:.1f} us "
            f"(client used {share:.0%} of a core)   "
            f"(runs: {_runs(byog_runs)}; errors {sum(r['errors'] for r in byog_runs)})"
        )
        httpx_tok_s = statistics.median(r["tok_s"] for r in httpx_runs)
        print(f"same loop on httpx:    {httpx_tok_s:12,.0f} tok/s   (aiohttp/httpx = {byog_tok_s / httpx_tok_s:.2f}x)")
        if vllm_runs:
            vllm_tok_s = statistics.median(r["tok_s"] for r in vllm_runs)
            print(f"vllm bench serve:      {vllm_tok_s:12,.0f} tok/s   (runs: {_runs(vllm_runs)})")
            print(f"ratio byog / vllm bench serve: {byog_tok_s / vllm_tok_s:.2f}x  (goal >= 2x)")


if __name__ == "__main__":
    main()
