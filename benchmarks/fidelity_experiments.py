"""Why byog's TPOT differs from `vllm bench serve`'s at long prompts: one experiment per hypothesis.

Runs against an already-running server (closed loop at concurrency C, N = 4 x C prompts, ISL/OSL
fixed, greedy). Every experiment is a pair of runs, byog and vLLM's client, alternated; each run
also reads the server's own view of the same requests from /metrics (mean TPOT and inter-token
gap as the engine timed them), so a difference the server also sees is a workload difference,
and one only the clients see is a measurement difference.

    python benchmarks/fidelity_experiments.py --base-url URL --model NAME --tokenizer DIR --out DIR \
        --isl 1024 --osl 256 --concurrency 8 --experiments all --repeats 1

Experiments (hypotheses of issue 19):
  defaults          each tool's own request body and prompts (reproduces the gap)
  vllm-body         byog sends exactly vLLM's body (no min_tokens, usage only at the end)
  byog-body         vLLM's client sends byog's body (min_tokens + continuous usage via --extra-body)
  no-min-tokens     byog's body without min_tokens (is the min-tokens logits processor the cost?)
  no-chunk-usage    byog's body without continuous_usage_stats (is per-chunk usage the cost?)
  vllm-prompts      byog sends the prompts of vLLM's random dataset (same seed): prompt content
  byog-prompts      vLLM's client replays byog's prompts (decoded to text): prompt content, reversed
  matched         each tool's defaults, the final table's cell (use with --alternate and --warmup-prompts)

Options for the matched table: ``--alternate`` runs odd repeats in the reverse order (byog, vLLM,
vLLM, byog: a drift or a first-run effect falls on both tools alike); ``--warmup-prompts N`` first
sends N prompts through byog's loop at the largest C (logged as experiment ``warmup``, not compared);
``--vllm-in-process`` runs vLLM's client in this process (its import costs ~20 s per run as a
subprocess, which would double the device time of a table; the arguments are the same).
Raw results: OUT/runs.jsonl (one line per run), OUT/rows/*.parquet (byog's rows),
OUT/vllm/*.json (vLLM's detailed results). `benchmarks/fidelity_table.py OUT` re-prints them.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from byog.bench.crosscheck import run_byog, run_vllm_bench, run_vllm_bench_serve
from byog.bench.prompts import Prompt, ServerTokenizer, build_prompts

HYPOTHESES = ("defaults", "vllm-body", "byog-body", "no-min-tokens", "no-chunk-usage", "vllm-prompts", "byog-prompts")
EXPERIMENTS = (*HYPOTHESES, "matched")
VLLM_DEFAULT_BODY: dict[str, Any] = {}  # --extra-body left out: vLLM's own body


def vllm_random_prompts(tokenizer_dir: str, isl: int, osl: int, count: int, seed: int) -> list[Prompt]:
    """The prompts `vllm bench serve --dataset-name random --seed SEED` sends (vLLM's own sampler)."""
    from transformers import AutoTokenizer
    from vllm.benchmarks.datasets import RandomDataset

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    requests = RandomDataset(random_seed=seed).sample(
        tokenizer=tokenizer, num_requests=count, input_len=isl, output_len=osl
    )
    return [Prompt(body=r.prompt, expected_n_in=int(r.prompt_len)) for r in requests]


def byog_prompts_as_text(base_url: str, model: str, isl: int, count: int, seed: int, point_id: str, path: Path) -> Path:
    """byog's random-id prompts, decoded by the server, as a `custom` dataset for vLLM's client."""
    tok = ServerTokenizer(base_url, model)
    try:
        prompts = build_prompts(
            kind="random",
            dataset=None,
            api="completions",
            isl=isl,
            count=count,
            seed=seed,
            point_id=point_id,
            server=tok,
            tokenizer_path=None,
        )
    finally:
        tok.close()
    with httpx.Client(timeout=60.0) as client:
        texts = [
            client.post(f"{base_url}/detokenize", json={"model": model, "tokens": p.body}).json()["prompt"]
            for p in prompts
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts))
    return path


def vllm_bench_serve_in_process(
    base_url: str, model: str, tokenizer: str, *, result_path: Path, **settings: Any
) -> dict[str, Any]:
    """``run_vllm_bench_serve`` without the subprocess: vLLM's bench imported once, same arguments."""
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    def execute(arguments: list[str]) -> None:
        parser = FlexibleArgumentParser()
        add_cli_args(parser)
        bench_main(parser.parse_args(arguments))

    summary, _ = run_vllm_bench(execute, base_url, model, tokenizer, result_path=result_path, **settings)
    return {**summary, "in_process": True}


def plan_runs(
    name: str, args: argparse.Namespace, c: int, rep: int, out: Path
) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    n = min(args.prompts_per_c * c, args.max_prompts) if args.max_prompts else args.prompts_per_c * c
    kw = dict(isl=args.isl, osl=args.osl, concurrency=c, num_prompts=n, seed=rep)
    tag = f"{name}-isl{args.isl}-c{c}-r{rep}"
    url, model, tok = args.base_url, args.model, args.tokenizer

    def byog(**extra: Any) -> Callable[[], dict[str, Any]]:
        return lambda: run_byog(url, model, tok, rows_path=out / "rows" / f"{tag}-byog.parquet", **kw, **extra)

    def vllm(**extra: Any) -> Callable[[], dict[str, Any]]:
        runner = vllm_bench_serve_in_process if args.vllm_in_process else run_vllm_bench_serve
        return lambda: runner(url, model, tok, result_path=out / "vllm" / f"{tag}-vllm.json", **kw, **extra)

    if name == "matched":
        pair = [("byog", byog()), ("vllm", vllm(extra_body=VLLM_DEFAULT_BODY))]
        return pair[::-1] if args.alternate and rep % 2 else pair
    if name == "defaults":
        return [("byog", byog()), ("vllm", vllm(extra_body=VLLM_DEFAULT_BODY))]
    if name == "vllm-body":
        return [("byog", byog(request_body="vllm")), ("vllm", vllm(extra_body=VLLM_DEFAULT_BODY))]
    if name == "byog-body":
        return [("byog", byog()), ("vllm", vllm(same_body=True))]
    if name == "no-min-tokens":
        return [("byog", byog(extra_body={"min_tokens": None})), ("vllm", vllm(extra_body=VLLM_DEFAULT_BODY))]
    if name == "no-chunk-usage":
        return [
            ("byog", byog(extra_body={"stream_options": {"include_usage": True}})),
            ("vllm", vllm(extra_body=VLLM_DEFAULT_BODY)),
        ]
    if name == "vllm-prompts":
        prompts = vllm_random_prompts(tok, args.isl, args.osl, n, rep)
        return [("byog", byog(request_body="vllm", prompts=prompts)), ("vllm", vllm(extra_body=VLLM_DEFAULT_BODY))]
    if name == "byog-prompts":
        point_id = f"fidelity-c{c}-isl{args.isl}-osl{args.osl}-s{rep}"  # run_byog's own point id: the same ids
        path = byog_prompts_as_text(url, model, args.isl, n, rep, point_id, out / "prompts" / f"{tag}.jsonl")
        return [("byog", byog(request_body="vllm")), ("vllm", vllm(extra_body=VLLM_DEFAULT_BODY, prompts_file=path))]
    raise SystemExit(f"unknown experiment {name}")


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--base-url", required=True)
    cli.add_argument("--model", required=True)
    cli.add_argument("--tokenizer", required=True)
    cli.add_argument("--out", type=Path, required=True)
    cli.add_argument("--isl", type=int, default=1024)
    cli.add_argument("--osl", type=int, default=256)
    cli.add_argument("--concurrency", default="8", help="one or more, e.g. 1,8,32,64")
    cli.add_argument("--prompts-per-c", type=int, default=4)
    cli.add_argument("--max-prompts", type=int, default=0, help="cap on prompts per run (0: none)")
    cli.add_argument(
        "--experiments", default="all", help=f"comma-separated of {', '.join(EXPERIMENTS)}, or all (the hypotheses)"
    )
    cli.add_argument("--repeats", type=int, default=1)
    cli.add_argument("--alternate", action="store_true", help="odd repeats run the pair in reverse order")
    cli.add_argument("--warmup-prompts", type=int, default=0, help="byog prompts at the largest C first, not compared")
    cli.add_argument("--vllm-in-process", action="store_true", help="vLLM's client imported once, in this process")
    args = cli.parse_args()
    names = HYPOTHESES if args.experiments == "all" else tuple(args.experiments.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "runs.jsonl").open("a")
    levels = [int(x) for x in args.concurrency.split(",")]
    Cell = tuple[str, int, int, Callable[[], list[tuple[str, Callable[[], dict[str, Any]]]]]]
    cells: list[Cell] = []
    if args.warmup_prompts:
        top = max(levels)

        def warmup() -> dict[str, Any]:
            return run_byog(
                args.base_url,
                args.model,
                args.tokenizer,
                isl=args.isl,
                osl=args.osl,
                concurrency=top,
                num_prompts=args.warmup_prompts,
                seed=99,
                rows_path=args.out / "rows" / f"warmup-isl{args.isl}-c{top}-r0-byog.parquet",
            )

        cells.append(("warmup", top, 0, lambda: [("byog", warmup)]))
    cells += [
        (name, c, rep, lambda name=name, c=c, rep=rep: plan_runs(name, args, c, rep, args.out))
        for c in levels
        for rep in range(args.repeats)
        for name in names
    ]
    for name, c, rep, planned in cells:
        for tool, run in planned():
            started = time.time()
            try:
                result = run()
            except Exception as err:  # one failed run must not lose the others
                result = {"error": f"{type(err).__name__}: {err}"[:2000]}
            line = {
                **result,
                "experiment": name,
                "tool": tool,
                "isl": args.isl,
                "osl": args.osl,
                "concurrency": c,
                "repeat": rep,
                "wall_s": round(time.time() - started, 2),
            }
            log.write(json.dumps(line) + "\n")
            log.flush()
            tpot = result.get("median_tpot_s")
            server = result.get("server_mean_tpot_s")
            print(
                f"{name:15s} {tool:5s} ISL {args.isl} C {c} rep {rep}: TPOT "
                f"{tpot * 1e3 if tpot else float('nan'):.3f} ms, server TPOT "
                f"{server * 1e3 if server else float('nan'):.3f} ms {result.get('error', '')}",
                flush=True,
            )


if __name__ == "__main__":
    main()
