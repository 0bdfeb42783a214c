"""Re-print the fidelity experiments (benchmarks/fidelity_experiments.py) from their raw files.

byog's medians are recomputed from its raw request rows with byog's own formulas; vLLM's from
its detailed result (per-request TTFT and inter-chunk gaps: TPOT_r = sum(itl_r) / (n_out_r - 1),
as `vllm bench serve` defines it). The server's view (mean TPOT as the engine timed it) comes
from the run's /metrics deltas recorded in runs.jsonl. With several repeats (the matched table:
byog, vLLM, vLLM, byog) each tool's TPOT is the median of its runs' medians, and "by repeat" gives
byog / vLLM for each repeat; "cache hits" is the prefix-cache hit share of the prompt tokens the
server looked up during the cell (it must be 0 for a fair comparison: hits shorten prefills).

    python benchmarks/fidelity_table.py benchmarks/results/h200-fidelity
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from byog.analysis import metrics as m
from byog.schemas.bench import read_request_rows


def _median(runs: list[Any], value: Callable[[Any], float | None]) -> float | None:
    values = [v for v in (value(r) for r in runs) if v is not None]
    return statistics.median(values) if values else None


def _ms(x: float | None) -> str:
    return f"{x * 1e3:.3f}" if x else "-"


def byog_median_tpot_s(rows_path: Path) -> float | None:
    rows = read_request_rows(rows_path)
    return m.percentile([x for x in map(m.tpot_s, rows) if x is not None], 50)


def vllm_median_tpot_s(result_path: Path) -> float | None:
    result = json.loads(result_path.read_text())
    tpots = [sum(itl) / (n - 1) for itl, n in zip(result["itls"], result["output_lens"], strict=True) if n > 1]
    return statistics.median(tpots) if tpots else None


def rederive(folder: Path, run: dict[str, Any]) -> float | None:
    tag = f"{run['experiment']}-isl{run['isl']}-c{run['concurrency']}-r{run['repeat']}"
    if run["tool"] == "byog":
        path = folder / "rows" / f"{tag}-byog.parquet"
        return byog_median_tpot_s(path) if path.is_file() else None
    path = folder / "vllm" / f"{tag}-vllm.json"
    return vllm_median_tpot_s(path) if path.is_file() else None


# Lines written before the fix of fidelity_experiments.py carry the client's own name for vLLM.
TOOL_NAMES = {"vllm bench serve": "vllm"}


def main(folder: Path) -> None:
    runs = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines() if line.strip()]
    for run in runs:
        run["tool"] = TOOL_NAMES.get(run["tool"], run["tool"])
    groups: dict[tuple[str, int, int], dict[str, list[dict[str, Any]]]] = {}
    for run in runs:
        groups.setdefault((run["experiment"], run["isl"], run["concurrency"]), {}).setdefault(run["tool"], []).append(
            run
        )
    print(
        "| experiment | ISL | C | byog TPOT ms | vLLM TPOT ms | ratio | by repeat | server TPOT ms (byog run / vLLM "
        "run) "
        "| server ratio | cache hits |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for (name, isl, c), tools in groups.items():
        b, v = (_median(tools.get(tool, []), lambda r: rederive(folder, r)) for tool in ("byog", "vllm"))
        sb, sv = (_median(tools.get(tool, []), lambda r: r.get("server_mean_tpot_s")) for tool in ("byog", "vllm"))
        ratio = f"{b / v:.4f}" if b and v else "-"
        sratio = f"{sb / sv:.4f}" if sb and sv else "-"
        print(
            f"| {name} | {isl} | {c} | {_ms(b)} | {_ms(v)} | {ratio} | {_by_repeat(folder, tools)} "
            f"| {_ms(sb)} / {_ms(sv)} | {sratio} | {_cache_hits(tools)} |"
        )


def _by_repeat(folder: Path, tools: dict[str, list[dict[str, Any]]]) -> str:
    byog = {r["repeat"]: rederive(folder, r) for r in tools.get("byog", [])}
    vllm = {r["repeat"]: rederive(folder, r) for r in tools.get("vllm", [])}
    ratios = [f"{byog[k] / vllm[k]:.4f}" for k in sorted(byog) if byog[k] and vllm.get(k)]
    return ", ".join(ratios) if ratios else "-"


def _cache_hits(tools: dict[str, list[dict[str, Any]]]) -> str:
    runs = [r for group in tools.values() for r in group]
    hits = sum(r.get("server_prefix_cache_hits") or 0 for r in runs)
    queries = sum(r.get("server_prefix_cache_queries") or 0 for r in runs)
    if queries:
        return f"{hits / queries:.1%}"
    return "0 (no lookups)" if any("server_prefix_cache_queries" in r for r in runs) else "-"


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/h200-fidelity"))
