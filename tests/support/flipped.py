"""Eval items written into a synthetic run directory in the real items.parquet format, for the
discordant-items view: byog's own arithmetic rows (so the prompt is found by its sha256) and a
gated task (GPQA) whose answers must never be shown."""

from __future__ import annotations

import json
from typing import Any

from byog.core.io import row_sha256
from byog.core.paths import RunDir
from byog.core.settings import PACKAGED_DATASETS
from byog.plans.tasks import TASKS
from byog.schemas.evals import write_eval_items
from tests.support.synthetic import write_eval_results

HOSTILE_ANSWER = "<img src=x onerror=alert(1)> @octocat [link](https://evil.example) #12"


def arithmetic_rows(n: int) -> list[dict[str, Any]]:
    lines = (PACKAGED_DATASETS / "arithmetic" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:n]]


def write_task(
    run_dir: RunDir,
    server: str,
    task: str,
    rows: list[dict[str, Any]],
    right: set[int],
    answer_of: Any = None,
    raw_of: Any = None,
) -> None:
    """items.parquet and results.json of ``task`` on ``server``: the items at ``right`` answered right;
    ``raw_of(i)``: a wrong item's raw output, its answer then ``[invalid]`` (as the runner keeps it)."""
    items = []
    for i, row in enumerate(rows):
        target = str(row.get("answer", i))
        wrong = answer_of(i) if answer_of else f"{target}0"
        raw = raw_of(i) if raw_of and i not in right else None
        if raw is not None:
            wrong = "[invalid]"
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
                "raw_output": raw,
                "raw_output_chars": None if raw is None else len(raw),
            }
        )
    write_eval_items(run_dir.eval_items(server, task), items)
    score = 100.0 * len(right) / len(rows)
    write_eval_results(
        run_dir,
        server,
        task,
        n_rows=len(rows),
        score=score,
        seed=1234,
        limit=len(rows),
        version="test",
        dataset_id=task,
        gated=task == "gpqa_diamond",
        answer_extraction=TASKS[task].answer_extraction if raw_of and task in TASKS else None,
    )
