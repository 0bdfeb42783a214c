"""Run `vllm bench serve` at every (ISL, B) point of the H200 sweep, with /metrics around each point.

One process runs all points: each point's arguments are parsed by the very parser `vllm bench serve`
uses (``vllm.benchmarks.serve.add_cli_args``) and run by its ``main``, so a point is the CLI run
``vllm bench serve <argv>`` without paying vLLM's import (~10 s) once per point on the GPU machine.
Per point it writes ``vllm-<point>.json`` (vLLM's own result, --save-detailed) and
``vllm-<point>.counters.json`` (the argv, wall time and the server's counter deltas).

    PYTHONPATH=/tmp/site:. python3 benchmarks/h200_vllm_bench.py --base-url http://127.0.0.1:8000 \
        --model NAME --tokenizer DIR --isl 1 1024 --osl 256 --batch-sizes 1 2 4 --waves 3 --out DIR
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from pathlib import Path

from byog.analysis.counters import counter_deltas


def point_name(batch_size: int, isl: int, osl: int) -> str:
    """The same coordinates as byog's batch point id (``batch-b4-isl1024-osl256``)."""
    return f"b{batch_size}-isl{isl}-osl{osl}"


def point_argv(
    base_url: str,
    model: str,
    tokenizer: str,
    batch_size: int,
    isl: int,
    osl: int,
    waves: int,
    out: Path,
    seed: int,
    temperature: float | None = None,
) -> list[str]:
    """`vllm bench serve` arguments for one point: B in flight, waves x B measured prompts, B warm-ups.

    vLLM 0.24's bench no longer sends temperature 0 (the server's default applies: sampling at
    temperature 1 here); ``temperature=0`` asks for greedy decoding, as byog's requests do.
    """
    sampling = [] if temperature is None else ["--temperature", str(temperature)]
    return [
        *sampling,
        "--backend",
        "openai",
        "--base-url",
        base_url,
        "--endpoint",
        "/v1/completions",
        "--model",
        model,
        "--tokenizer",
        tokenizer,
        "--dataset-name",
        "random",
        "--random-input-len",
        str(isl),
        "--random-output-len",
        str(osl),
        "--max-concurrency",
        str(batch_size),
        "--num-prompts",
        str(batch_size * waves),
        "--num-warmups",
        str(batch_size),
        "--ignore-eos",
        "--seed",
        str(seed),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(out),
        "--result-filename",
        f"vllm-{point_name(batch_size, isl, osl)}.json",
        "--disable-tqdm",
    ]


def _metrics(base_url: str) -> str | None:
    try:
        with urllib.request.urlopen(f"{base_url}/metrics", timeout=30) as response:
            return response.read().decode()
    except OSError:
        return None


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--base-url", required=True)
    cli.add_argument("--model", required=True)
    cli.add_argument("--tokenizer", required=True)
    cli.add_argument("--isl", type=int, nargs="+", required=True)
    cli.add_argument("--osl", type=int, required=True)
    cli.add_argument("--batch-sizes", type=int, nargs="+", required=True)
    cli.add_argument("--waves", type=int, default=3)
    cli.add_argument("--out", type=Path, required=True)
    cli.add_argument("--temperature", type=float, default=None, help="Send this temperature (default: the server's).")
    opts = cli.parse_args()

    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    opts.out.mkdir(parents=True, exist_ok=True)
    for isl in opts.isl:
        for batch_size in opts.batch_sizes:
            name = point_name(batch_size, isl, opts.osl)
            # A seed per point: prompts differ between points, as byog's do.
            argv = point_argv(
                opts.base_url,
                opts.model,
                opts.tokenizer,
                batch_size,
                isl,
                opts.osl,
                opts.waves,
                opts.out,
                seed=1000 * isl + batch_size,
                temperature=opts.temperature,
            )
            parser = FlexibleArgumentParser()
            add_cli_args(parser)
            args = parser.parse_args(argv)
            before = _metrics(opts.base_url)
            t0 = time.perf_counter()
            result = bench_main(args)
            wall_s = time.perf_counter() - t0
            after = _metrics(opts.base_url)
            record = {
                "point": name,
                "batch_size": batch_size,
                "isl": isl,
                "osl": opts.osl,
                "waves": opts.waves,
                "warmups": batch_size,
                "temperature": opts.temperature,
                "argv": ["vllm", "bench", "serve", *argv],
                "wall_s": wall_s,
                "counter_deltas": counter_deltas(before, after),
            }
            (opts.out / f"vllm-{name}.counters.json").write_text(json.dumps(record, indent=1))
            print(
                f"vllm {name}: median TPOT {result.get('median_tpot_ms'):.3f} ms, "
                f"TTFT {result.get('median_ttft_ms'):.1f} ms, {result.get('output_throughput'):.0f} tok/s, "
                f"{wall_s:.1f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
