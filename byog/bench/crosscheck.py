"""Agreement with ``vllm bench serve``: run byog's client and vLLM's against the same server.

Both tools get the same ISL, OSL, concurrency and number of prompts (closed loop); each run is
bracketed by ``/metrics`` snapshots so each tool's token totals can be checked against what the
server says it processed. Used by ``bench/fidelity.py`` (figures) and an integration test.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx

from byog.analysis import counters, metrics
from byog.bench.prompts import Prompt, ServerTokenizer, build_prompts
from byog.bench.workloads import run_point
from byog.schemas.bench import BenchPoint, RequestRow, write_request_rows
from byog.schemas.plan import RandomPrompts, RequestBodyStyle


def _metrics_text(base_url: str) -> str:
    return httpx.get(f"{base_url}/metrics", timeout=30.0).text


def _server_side(deltas: dict[str, Any]) -> dict[str, Any]:
    """The server's own view of the same requests: its mean TPOT and inter-token gap."""
    return {
        "server_generation_tokens": deltas.get(counters.GENERATION_TOKENS),
        "server_prompt_tokens": deltas.get(counters.PROMPT_TOKENS),
        "server_mean_tpot_s": counters.histogram_mean(deltas, counters.SERVER_TPOT_SUM, counters.SERVER_TPOT_COUNT),
        "server_mean_itl_s": counters.histogram_mean(deltas, counters.SERVER_ITL_SUM, counters.SERVER_ITL_COUNT),
        "server_steps": deltas.get(counters.ITERATIONS),
        # prefix-cache hits shorten prefills and so change every decode step they share
        "server_prefix_cache_hits": deltas.get(counters.PREFIX_CACHE_HITS),
        "server_prefix_cache_queries": deltas.get(counters.PREFIX_CACHE_QUERIES),
    }


# A stream read late (byog's process or the server's front end stalled) shows the token read late
# and the buffered ones after it in a burst, or, where the front end stalled, one merged chunk after
# a long gap. A first token read late makes the request's TPOT short by the stall over n_out - 1,
# a last token read late makes it long; a middle one moves nothing. The server's own TPOT is timed
# in its engine, so neither moves it.
BURST_SHARE = 0.1  # a gap under this share of the run's median gap: a buffered token
LATE_LAST_FACTOR = 3.0  # a last gap over this many median gaps: a stall (or a slow step) before it


def late_reads(records: Sequence[RequestRow]) -> list[str]:
    """Requests whose first or last token time may say when the client read it, not when the server
    made it: one line each (empty: every TPOT spans what the server timed). Gaps are judged against
    the median gap of the whole run: a request read mostly from a buffer has a median gap of 0."""
    streams = [(index, row) for index, row in enumerate(records) if row.ok and len(row.chunk_t_ns) >= 3]
    gaps = {index: [b - a for a, b in pairwise(row.chunk_t_ns)] for index, row in streams}
    if not gaps:
        return []
    median = statistics.median(g for request in gaps.values() for g in request)
    out: list[str] = []
    for index, row in streams:
        first, last = gaps[index][0], gaps[index][-1]
        if row.chunk_tokens[0] > 1:  # chunk_tokens lists the chunks chunk_t_ns times
            out.append(f"request {index}: its first chunk carried {row.chunk_tokens[0]} tokens")
        elif first < BURST_SHARE * median:
            out.append(f"request {index}: its second token came {first / 1e6:.2f} ms after the first")
        if last < BURST_SHARE * median or last > LATE_LAST_FACTOR * median:
            out.append(
                f"request {index}: its last token came {last / 1e6:.2f} ms after the one before"
                f" (median gap {median / 1e6:.1f} ms)"
            )
    return out


def run_byog(
    base_url: str,
    model: str,
    tokenizer: str | None,
    *,
    isl: int,
    osl: int,
    concurrency: int,
    num_prompts: int,
    seed: int = 0,
    request_body: RequestBodyStyle = "byog",
    extra_body: dict[str, Any] | None = None,
    prompts: Sequence[Prompt] | None = None,
    rows_path: Path | None = None,
) -> dict[str, Any]:
    """byog's closed loop; medians from the per-request formulas, totals from the server's usage.

    ``prompts``: send these instead of byog's random token ids (e.g. the prompts of vLLM's own
    random dataset, to hold prompt content fixed between the two tools). ``rows_path``: keep the
    raw request rows there (parquet), so a table can be re-derived later.
    """
    point = BenchPoint(
        point_id=f"fidelity-c{concurrency}-isl{isl}-osl{osl}-s{seed}",
        workload="fidelity",
        kind="concurrency",
        concurrency=concurrency,
        isl=isl,
        osl=osl,
        prompts=RandomPrompts(),
        num_prompts=num_prompts,
        prompt_seed=seed,
        request_body=request_body,
    )
    if prompts is None:
        tok = ServerTokenizer(base_url, model)
        try:
            prompts = build_prompts(
                kind="random",
                dataset=None,
                api="completions",
                isl=isl,
                count=num_prompts,
                seed=seed,
                point_id=point.point_id,
                server=tok,
                tokenizer_path=tokenizer,
            )
        finally:
            tok.close()
    before = _metrics_text(base_url)
    run = run_point(base_url, model, point, prompts, extra_body=extra_body)
    deltas = counters.counter_deltas(before, _metrics_text(base_url))
    if rows_path is not None:
        write_request_rows(rows_path, run.records)
    traces = run.records
    errors = [r.error for r in run.records if r.error]
    tpots = [x for x in map(metrics.tpot_s, traces) if x is not None]
    return {
        "tool": "byog",
        "median_tpot_s": metrics.percentile(tpots, 50),
        "mean_tpot_s": metrics.mean(tpots),
        "median_ttft_s": metrics.percentile([x for x in map(metrics.ttft_s, traces) if x is not None], 50),
        "median_itl_s": metrics.percentile(metrics.pooled_itl_s(traces), 50),
        "output_tok_s": metrics.output_tok_s(traces),
        "completed": len(traces) - len(errors),
        "errors": errors[:3],
        "total_output_tokens": sum(r.n_out for r in run.records),
        "total_input_tokens": sum(r.n_in or 0 for r in run.records),
        **_server_side(deltas),
        "client_cpu_share": run.cpu_share,
        "client_loop_lag_p99_s": run.loop_lag_p99_s,
        "late_reads": late_reads(run.records),
    }


def _vllm_bench_serve_args(
    base_url: str,
    model: str,
    tokenizer: str,
    *,
    isl: int,
    osl: int,
    concurrency: int,
    num_prompts: int,
    seed: int = 0,
    same_body: bool = True,
    extra_body: dict[str, Any] | None = None,
    prompts_file: Path | None = None,
    result_dir: str,
) -> list[str]:
    """The arguments after ``vllm bench serve`` for byog's settings (see ``run_vllm_bench_serve``)."""
    args = [
        "--backend",
        "openai",
        "--base-url",
        base_url,
        "--model",
        model,
        "--tokenizer",
        tokenizer,
        "--num-prompts",
        str(num_prompts),
        "--max-concurrency",
        str(concurrency),
        "--ignore-eos",
        "--temperature",
        "0",
        "--seed",
        str(seed),
        "--disable-tqdm",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        result_dir,
        "--result-filename",
        "r.json",
    ]
    if prompts_file is None:
        args += ["--dataset-name", "random", "--random-input-len", str(isl), "--random-output-len", str(osl)]
    else:
        args += [
            "--dataset-name",
            "custom",
            "--dataset-path",
            str(prompts_file),
            "--custom-output-len",
            str(osl),
            "--skip-chat-template",
        ]
    if extra_body is not None:
        args += ["--extra-body", json.dumps(extra_body)] if extra_body else []
    elif same_body:
        args += [
            "--extra-body",
            json.dumps({"min_tokens": osl, "stream_options": {"include_usage": True, "continuous_usage_stats": True}}),
        ]
    return args


def _vllm_bench_serve_summary(result: dict[str, Any], deltas: dict[str, Any]) -> dict[str, Any]:
    """vLLM's own result JSON in the shape of ``run_byog``'s summary."""
    return {
        "tool": "vllm bench serve",
        "median_tpot_s": result["median_tpot_ms"] / 1e3,
        "mean_tpot_s": result["mean_tpot_ms"] / 1e3,
        "median_ttft_s": result["median_ttft_ms"] / 1e3,
        "median_itl_s": result["median_itl_ms"] / 1e3,
        "output_tok_s": result["output_throughput"],
        "completed": result["completed"],
        "errors": [e for e in result.get("errors", []) if e][:3],
        "total_output_tokens": result["total_output_tokens"],
        "total_input_tokens": result["total_input_tokens"],
        **_server_side(deltas),
    }


def run_vllm_bench(
    execute: Callable[[list[str]], None],
    base_url: str,
    model: str,
    tokenizer: str,
    *,
    result_path: Path | None = None,
    **settings: Any,
) -> tuple[dict[str, Any], list[str]]:
    """``execute(arguments)`` runs ``vllm bench serve`` with byog's settings, bracketed by ``/metrics``.

    Returns its summary and the arguments it ran with (the temporary result folder as ``OUT``);
    ``result_path``: keep vLLM's own detailed result JSON there (per-request TTFT and ITL lists).
    """
    with tempfile.TemporaryDirectory() as out:
        arguments = _vllm_bench_serve_args(base_url, model, tokenizer, result_dir=out, **settings)
        before = _metrics_text(base_url)
        execute(arguments)
        after = _metrics_text(base_url)
        result = json.loads((Path(out) / "r.json").read_text())
        shown = [a.replace(out, "OUT") for a in arguments]
    if result_path is not None:
        result_path.parent.mkdir(parents=True, exist_ok=True)
        result_path.write_text(json.dumps(result))
    return _vllm_bench_serve_summary(result, counters.counter_deltas(before, after)), shown


def run_vllm_bench_serve(
    base_url: str,
    model: str,
    tokenizer: str,
    *,
    isl: int,
    osl: int,
    concurrency: int,
    num_prompts: int,
    seed: int = 0,
    same_body: bool = True,
    extra_body: dict[str, Any] | None = None,
    prompts_file: Path | None = None,
    result_path: Path | None = None,
) -> dict[str, Any]:
    """``vllm bench serve`` (the installed vLLM, through byog's entry point) with the same settings.

    ``same_body``: also send byog's ``min_tokens`` and ``continuous_usage_stats`` (through
    ``--extra-body``) so the server does identical work for both tools and any difference is the
    client's. Without it vLLM sends only ``max_tokens`` + ``ignore_eos`` + ``include_usage``.
    ``extra_body`` replaces that choice with exactly these fields. ``prompts_file``: a jsonl of
    ``{"prompt": text}`` replayed through vLLM's ``custom`` dataset instead of its random one.
    ``result_path``: keep vLLM's own detailed result JSON there (per-request TTFT and ITL lists).
    """
    entry = [sys.executable, "-m", "byog.images.vllm_entry", "bench", "serve"]

    def execute(arguments: list[str]) -> None:
        proc = subprocess.run(
            [*entry, *arguments], capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"vllm bench serve failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )

    summary, shown = run_vllm_bench(
        execute,
        base_url,
        model,
        tokenizer,
        result_path=result_path,
        isl=isl,
        osl=osl,
        concurrency=concurrency,
        num_prompts=num_prompts,
        seed=seed,
        same_body=same_body,
        extra_body=extra_body,
        prompts_file=prompts_file,
    )
    return {**summary, "command": " ".join([*entry[1:], *shown])}
