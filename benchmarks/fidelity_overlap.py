"""Why two clients' TPOT differ where the server agrees with each: how prefills overlap decodes.

For every byog / vLLM pair of a fidelity folder (benchmarks/fidelity_experiments.py), from the raw
files alone: each request's span (sent, first token, last token) from byog's rows (chunk times)
and from vLLM's detailed result (start time, TTFT, inter-chunk gaps), then
- the median and 10/90th percentiles of the pooled inter-chunk gaps (the decode-only steps dominate
  them: if these agree, the decode steps cost the same);
- "prefills per decode window": for each request, how many other requests got their first token
  while it was decoding (each such prefill is a slow step inside its TPOT), averaged;
- the median TTFT and the spread of the first wave's finishing times (how synchronised the waves stay).

    python benchmarks/fidelity_overlap.py benchmarks/results/fidelity-h200/matched/hypotheses
"""

from __future__ import annotations

import json
import sys
from itertools import pairwise
from pathlib import Path

import numpy as np

from byog.schemas.bench import read_request_rows

Span = tuple[float, float, float]  # sent, first token, last token (s)


def byog_spans(path: Path) -> tuple[list[Span], list[float]]:
    rows = read_request_rows(path)
    spans = [(r.t_send_ns / 1e9, r.chunk_t_ns[0] / 1e9, r.chunk_t_ns[-1] / 1e9) for r in rows if r.chunk_t_ns]
    gaps = [float(b - a) / 1e9 for r in rows for a, b in pairwise(r.chunk_t_ns)]
    return spans, gaps


def vllm_spans(path: Path) -> tuple[list[Span], list[float]]:
    result = json.loads(path.read_text())
    spans = [
        (s, s + ttft, s + ttft + sum(itl))
        for s, ttft, itl in zip(result["start_times"], result["ttfts"], result["itls"], strict=True)
    ]
    return spans, [g for itl in result["itls"] for g in itl]


def describe(spans: list[Span], gaps: list[float], concurrency: int) -> str:
    spans = sorted(spans)
    inside = [
        sum(1 for j, (_, first2, _) in enumerate(spans) if j != i and first < first2 < last)
        for i, (_, first, last) in enumerate(spans)
    ]
    ends = sorted(last for _, _, last in spans)[:concurrency]
    p10, p50, p90 = np.percentile(gaps, [10, 50, 90]) * 1e3
    ttft = np.median([first - sent for sent, first, _ in spans]) * 1e3
    return (
        f"gap p10/p50/p90 {p10:.2f}/{p50:.2f}/{p90:.2f} ms | prefills per decode window {np.mean(inside):.2f} | "
        f"TTFT p50 {ttft:.0f} ms | first wave ends within {(ends[-1] - ends[0]) * 1e3:.0f} ms"
    )


def main(folder: Path) -> None:
    for line in (folder / "runs.jsonl").read_text().splitlines():
        run = json.loads(line)
        if run["tool"] != "byog" or run["experiment"] == "warmup":
            continue
        tag = f"{run['experiment']}-isl{run['isl']}-c{run['concurrency']}-r{run['repeat']}"
        byog, vllm = folder / "rows" / f"{tag}-byog.parquet", folder / "vllm" / f"{tag}-vllm.json"
        if not (byog.is_file() and vllm.is_file()):
            continue
        print(tag)
        print("  byog:", describe(*byog_spans(byog), run["concurrency"]))
        print("  vLLM:", describe(*vllm_spans(vllm), run["concurrency"]))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/fidelity-h200/matched"))
