"""Re-print the multi-node TPOT table from benchmarks/multinode_bench.py's JSON (no GPU needed).

    python benchmarks/multinode_table.py benchmarks/results/multinode-h200x2/multinode.json

One row per batch size B: TPOT P50 (ms) of TP2 on one node, across two nodes with vLLM's native
launcher and with Ray, and each multi-node figure as a ratio to the one-node figure; then each
server's start-up time and any launch error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def table(data: dict) -> str:
    names = list(data["names"].values())
    by = {(r["server"], r["batch_size"]): r for r in data["rows"]}
    batches = sorted({r["batch_size"] for r in data["rows"]})
    base = names[0]
    head = ["B"] + [f"{n} TPOT ms" for n in names] + [f"{n}/{base}" for n in names[1:]]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for b in batches:
        vals = [(by.get((n, b)) or {}).get("tpot_p50_ms") for n in names]
        cells = [str(b)] + [f"{v:.2f}" if v is not None else "—" for v in vals]
        for v in vals[1:]:
            cells.append(f"{v / vals[0]:.3f}" if v is not None and vals[0] else "—")
        lines.append(" | ".join(cells))
    lines.append("")
    lines.append(f"ISL {data['isl']}, OSL {data['osl']}, vllm serve args: {data['args']}")
    for n in names:
        s = data["servers"].get(n, {})
        if "error" in s:
            lines.append(f"{n}: did not start: {s['error'].splitlines()[0][:300]}")
        else:
            invalid = [
                f"B={r['batch_size']}: {'; '.join(r['invalid_reasons'])}"
                for r in data["rows"]
                if r["server"] == n and not r.get("valid", True)
            ]
            lines.append(
                f"{n}: healthy after {s.get('ready_after_s')} s, TP served {s.get('tp_served')}"
                + (f"; invalid points: {' | '.join(invalid)}" if invalid else "")
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(json.loads(Path(sys.argv[1]).read_text())))
