"""Eval items written into a synthetic run directory in the real items.parquet format, for the
discordant-items view: byog's own arithmetic rows (so the prompt is found by its sha256) and a
gated task (GPQA) whose answers must never be shown."""

from __future__ import annotations

import json
from typing import Any

from byog.core.io import atomic_write_json, row_sha256
from byog.core.paths import RunDir
from byog.core.settings import PACKAGED_DATASETS
from byog.schemas.evals import write_eval_items

HOSTILE_ANSWER = "<img src=x onerror=alert(1)> @octocat [link](https://evil.example) #12"


def arithmetic_rows(n: int) -> list[dict[str, Any]]:
    lines = (PACKAGED_DATASETS / "arithmetic" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:n]]


def write_task(
    run_dir: RunDir, server: str, task: str, rows: list[dict[str, Any]], right: set[int], answer_of: Any = None
) -> None:
    """items.parquet and results.json of ``task`` on ``server``: the items at ``right`` answered right."""
    items = []
    for i, row in enumerate(rows):
        target = str(row.get("answer", i))
        wrong = answer_of(i) if answer_of else f"{target}0"
        items.append(
            {
                "item_id": str(row.get("id", f"train:{i}")),
                "item_sha256": row_sha256(row),
                "pass_index": 0,
                "seed": 1234,
                "extracted_answer": target if i in right else wrong,
                "target": target,
                "score": 1.0 if i in right else 0.0,
                "n_output_tokens": 3,
                "bin": None,
            }
        )
    write_eval_items(run_dir.eval_items(server, task), items)
    score = 100.0 * len(right) / len(rows)
    atomic_write_json(
        run_dir.eval_results(server, task),
        {
            "schema_version": 1,
            "server": server,
            "task": {"name": task, "version": "test", "gated": task == "gpqa_diamond"},
            "data": {"source": "generated", "dataset_id": task, "revision": None, "label": "generated"},
            "endpoint": {"base_url": "http://127.0.0.1:1", "model": "synthetic"},
            "sampling": {"passes": 1, "seeds": [1234], "temperature": 0.0, "do_sample": False},
            "runner": {"name": "synthetic"},
            "limit": len(rows),
            "n_items": len(rows),
            "n_rows": len(rows),
            "score": score,
            "stderr": None,
            "pass_scores": [score],
            "wall_s": 1.0,
        },
    )
