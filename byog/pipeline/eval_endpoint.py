"""`byog eval --endpoint URL` and `byog data pull`: the evals on their own, without a plan.

The same ``run_task`` / ``write_task`` as ``byog run`` uses; results land in a run directory
(``evals/<server>/<task>/``) so ``byog derive`` and the report read them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from byog.core.errors import UsageError
from byog.core.io import read_json
from byog.core.paths import RunDir, new_run_id, safe_name
from byog.core.reporter import Reporter
from byog.core.settings import hub_data_dir, resolve_data_dir, runs_dir
from byog.evals.data import pull
from byog.evals.runner import check_tasks_run, describe_endpoint, run_task, write_task
from byog.plans.tasks import parse_task_list
from byog.runtimes.record import resolved_config

DEFAULT_SEED = 1234


@dataclass(frozen=True)
class EvalFlags:
    endpoint: str
    tasks: str
    model: str | None = None
    tokenizer: str | None = None
    limit: int | None = None
    passes: int = 1
    seeds: str | None = None
    data_dir: Path | None = None
    server_name: str = "endpoint"
    max_gen_toks: int | None = None
    num_concurrent: int | None = None  # None: from the server's /server_info (byog.evals.capacity)


def parse_seeds(text: str | None, passes: int) -> list[int]:
    """--seeds 1,2,3 (at least --passes of them; pass k uses the k-th); default 1234, 1235, ..."""
    if text is None:
        return [DEFAULT_SEED + k for k in range(passes)]
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--seeds must be integers separated by commas, not '{text}'") from None
    if len(seeds) < passes:
        raise UsageError(f"--passes {passes} needs {passes} seeds but --seeds lists {len(seeds)}")
    return seeds[:passes]


def eval_endpoint(flags: EvalFlags, run_dir: Path | None, reporter: Reporter) -> dict[str, Any]:
    tasks = parse_task_list(flags.tasks)
    if flags.passes < 1:
        raise UsageError("--passes must be at least 1")
    seeds = parse_seeds(flags.seeds, flags.passes)
    server = safe_name(flags.server_name, "server name")
    data_dir = resolve_data_dir(flags.data_dir)
    endpoint = describe_endpoint(flags.endpoint, flags.model, flags.tokenizer)
    root = RunDir(run_dir or runs_dir() / f"eval-{new_run_id()}")
    overrides = {"max_gen_toks": flags.max_gen_toks} if flags.max_gen_toks else {}
    check_tasks_run(server, endpoint, root, ((task, overrides) for task in tasks))
    results = []
    server_info = None if flags.num_concurrent else resolved_config(endpoint.base_url).server_info
    for task in tasks:
        if root.eval_complete(server, task.name):
            reporter.line(f"eval {task.name}: already complete in {root.root}, skipped")
        else:
            run = run_task(
                task,
                server,
                endpoint,
                seeds=seeds,
                limit=flags.limit,
                data_dir=data_dir,
                num_concurrent=flags.num_concurrent,
                server_info=server_info,
                gen_overrides=overrides,
                reporter=reporter,
            )
            write_task(root, server, task.name, run)
        results.append(read_json(root.eval_results(server, task.name)))
    return {
        "run_dir": str(root.root),
        "endpoint": {"base_url": endpoint.base_url, "model": endpoint.model, "max_model_len": endpoint.max_model_len},
        "data_dir": str(data_dir) if data_dir else None,
        "results": [
            {
                "task": r["task"]["name"],
                "version": r["task"]["version"],
                "data": r["data"]["label"],
                "data_source": r["data"]["source"],
                "n_items": r["n_items"],
                "passes": r["sampling"]["passes"],
                "seeds": r["sampling"]["seeds"],
                "temperature": r["sampling"]["temperature"],
                "score": r["score"],
                "stderr": r["stderr"],
                "wall_s": r["wall_s"],
                **(
                    {"token_counter": r["extra"]["token_counter"], "bins": r["extra"]["bins"]}
                    if "token_counter" in r["extra"]
                    else {}
                ),
            }
            for r in results
        ],
    }


def data_pull(tasks_text: str, data_dir: Path | None) -> list[dict[str, Any]]:
    tasks = parse_task_list(tasks_text)
    target = data_dir or hub_data_dir()
    target.mkdir(parents=True, exist_ok=True)
    return pull(tasks, target)
