"""Fidelity bar: byog vs ``vllm bench serve`` against the same server, same lengths and concurrency.

Prints both tools' medians (TPOT, TTFT, ITL, output tok/s), the byog/vLLM ratios, and each
tool's token totals next to the server's own counters (``vllm:generation_tokens_total`` and
``vllm:prompt_tokens_total`` deltas). Runs alternate (byog, vllm, byog, vllm, ...) so slow drift
of the machine hits both; the byog-vs-byog spread is the run-to-run noise to judge the ratio by.

    python benchmarks/fidelity.py --endpoint http://127.0.0.1:8000 --tokenizer DIR \
        [--isl 32 --osl 64 --concurrency 1 --num-prompts 16 --repeats 3]
    # start the built-in CPU server (eager) itself
    python benchmarks/fidelity.py --launch --concurrency 1,4 --vllm-body both
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from byog.bench.crosscheck import run_byog, run_vllm_bench_serve


def _fmt_ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:9.3f}"


def compare(
    base_url: str, served: str, tokenizer: str, args: argparse.Namespace, concurrency: int, same_body: bool
) -> None:
    kw = dict(isl=args.isl, osl=args.osl, concurrency=concurrency, num_prompts=args.num_prompts)
    body = (
        "identical request bodies (vllm gets byog's min_tokens + continuous usage via --extra-body)"
        if same_body
        else "each tool's own request body"
    )
    print(
        f"\n== server {base_url} model {served}; ISL {args.isl} OSL {args.osl} C {concurrency} N {args.num_prompts}; "
        f"{args.repeats} alternating repeats; {body}",
        flush=True,
    )
    runs = []
    for rep in range(args.repeats):
        for tool in ("byog", "vllm"):
            if tool == "byog":
                r = run_byog(base_url, served, tokenizer, seed=rep, **kw)
            else:
                r = run_vllm_bench_serve(base_url, served, tokenizer, seed=rep, same_body=same_body, **kw)
            runs.append(r)
            tok_ok = (
                r["total_output_tokens"] == r["server_generation_tokens"],
                r["total_input_tokens"] == r["server_prompt_tokens"],
            )
            print(
                f"  rep {rep} {r['tool']:17s} TPOT {_fmt_ms(r['median_tpot_s'])} ms  TTFT "
                f"{_fmt_ms(r['median_ttft_s'])} ms  "
                f"ITL {_fmt_ms(r['median_itl_s'])} ms  out {r['output_tok_s']:8.2f} tok/s  "
                f"tokens out {r['total_output_tokens']} (server {r['server_generation_tokens']:.0f}) "
                f"in {r['total_input_tokens']} (server {r['server_prompt_tokens']:.0f}) "
                f"{'EQUAL' if all(tok_ok) else 'DIFFER'}  completed {r['completed']} errors {r['errors']}"
                + (
                    f"  client cpu {r['client_cpu_share']:.0%} lag p99 {r['client_loop_lag_p99_s'] * 1e3:.1f} ms"
                    if r.get("client_loop_lag_p99_s") is not None
                    else ""
                )
                + (f"\n    read late (TPOT may not be the server's): {r['late_reads']}" if r.get("late_reads") else ""),
                flush=True,
            )
    print(f"  vllm command: vllm {runs[1]['command'].split('vllm_entry ', 1)[-1]}")
    byog = [r for r in runs if r["tool"] == "byog"]
    vllm = [r for r in runs if r["tool"] != "byog"]
    print("  median over repeats       byog        vllm   byog/vllm")
    for key, label, scale in (
        ("median_tpot_s", "TPOT ms", 1e3),
        ("median_ttft_s", "TTFT ms", 1e3),
        ("median_itl_s", "ITL ms", 1e3),
        ("output_tok_s", "output tok/s", 1.0),
    ):
        b = statistics.median(r[key] for r in byog)
        v = statistics.median(r[key] for r in vllm)
        print(f"  {label:18s} {b * scale:12.3f} {v * scale:11.3f} {b / v:11.4f}")
    for name, group in (("byog", byog), ("vllm", vllm)):
        tpots = [r["median_tpot_s"] for r in group]
        if len(tpots) > 1:
            print(
                f"  {name} run-to-run TPOT spread (max-min)/median: "
                f"{(max(tpots) - min(tpots)) / statistics.median(tpots):.2%}"
            )
    exact = all(
        r["total_output_tokens"] == r["server_generation_tokens"]
        and r["total_input_tokens"] == r["server_prompt_tokens"]
        for r in byog
    )
    print(f"  byog token totals equal the server's counters in every run: {exact}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint")
    parser.add_argument("--model", help="served model name (default: the first of /v1/models)")
    parser.add_argument("--tokenizer", help="tokenizer dir (vllm bench serve needs one; default: the built-in SmolLM2)")
    parser.add_argument("--launch", action="store_true", help="launch the built-in CPU server (eager) for the run")
    parser.add_argument("--isl", type=int, default=32)
    parser.add_argument("--osl", type=int, default=64)
    parser.add_argument("--concurrency", default="1", help="one or more, e.g. 1,4")
    parser.add_argument("--num-prompts", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--vllm-body",
        choices=["same", "defaults", "both"],
        default="same",
        help="same: vllm bench serve sends byog's request body (min_tokens, usage per chunk) so only the "
        "clients differ; defaults: its own body; both: one comparison each",
    )
    args = parser.parse_args()

    server = None
    if args.launch:
        from byog.images.models import prepare_model
        from byog.runtimes.local import LocalRuntime
        from byog.schemas.plan import BUILTIN_MODEL, ModelSpec, server_config

        model = prepare_model(ModelSpec(path=BUILTIN_MODEL, max_model_len=4096))
        server = LocalRuntime().launch(
            "fidelity", server_config(args=["--enforce-eager"]), model, Path(tempfile.mkdtemp(prefix="byog-fidelity-"))
        )
        base_url, served, tokenizer = server.endpoint.base_url, model.served_name, args.tokenizer or model.tokenizer
    elif args.endpoint:
        import httpx

        base_url = args.endpoint.rstrip("/").removesuffix("/v1")
        served = args.model or httpx.get(f"{base_url}/v1/models", timeout=10).json()["data"][0]["id"]
        if not args.tokenizer:
            from byog.images.models import prepare_builtin_smollm2

            args.tokenizer = str(prepare_builtin_smollm2())
        tokenizer = args.tokenizer
    else:
        parser.error("give --endpoint URL or --launch")
    try:
        modes = ["defaults", "same"] if args.vllm_body == "both" else [args.vllm_body]
        for concurrency in [int(c) for c in str(args.concurrency).split(",")]:
            for mode in modes:
                compare(base_url, served, tokenizer, args, concurrency, same_body=mode == "same")
        return 0
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
