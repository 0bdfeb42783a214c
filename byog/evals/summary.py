"""The accuracy part of summary.json, derived only from the raw eval files of a run directory.

Pure and deterministic: ``summarize_evals(run_dir, plan)`` reads ``evals/<server>/<task>/items.parquet``
(and the task name and limit from ``results.json``), so ``byog verify`` can recompute it and get
the same numbers. Floats are finite or None (JSON null), never NaN.

- scores: per (server, task), with the data label from results.json (so fixture and generated
  rows never pass for the real benchmark): per-item score = mean over the K passes (points 0-100); the task
  score = mean over items; stderr = sd(item scores) / sqrt(n).
- verdicts: per (task, candidate vs the plan's baseline, speculative = the candidate's
  ServerConfig.speculative), on the items both servers scored (paired by item id and item
  sha256, so a changed item is never paired), through ``byog.evals.stats.paired_comparison``
  with the plan's margin for the task (EvalSpec.margin, else the task's default margin) and a
  score resolution of 100 / K points (K = the pair's passes; it floors SE_d when all d_i are equal).
"""

from __future__ import annotations

import math
from typing import Any

from byog.bundles.rundir import RunDir
from byog.evals import stats
from byog.plans.model import Plan


def item_scores(run_dir: RunDir, server: str, task: str) -> dict[tuple[str, str], float]:
    """(item_id, item_sha256) -> mean score over passes, in points."""
    import pyarrow.parquet as pq

    table = pq.read_table(run_dir.eval_items(server, task), columns=["item_id", "item_sha256", "score"])
    sums: dict[tuple[str, str], list[float]] = {}
    for item_id, sha, score in zip(*(table.column(c).to_pylist() for c in ("item_id", "item_sha256", "score"))):
        sums.setdefault((item_id, sha), []).append(float(score))
    return {key: 100.0 * math.fsum(vals) / len(vals) for key, vals in sums.items()}


def passes_of(run_dir: RunDir, server: str, task: str) -> int:
    import pyarrow.parquet as pq

    table = pq.read_table(run_dir.eval_items(server, task), columns=["pass_index"])
    return len(set(table.column("pass_index").to_pylist()))


def data_label(run_dir: RunDir, server: str, task: str) -> str | None:
    """What the items were: e.g. "openai/gsm8k (local copy)", "MRCR v2", "generated ...", "fixture ..."."""
    from byog.ioutil import read_json

    try:
        return str(read_json(run_dir.eval_results(server, task))["data"]["label"])
    except (KeyError, TypeError, ValueError):
        return None


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def margin_for(plan: Plan, task: str) -> float:
    from byog.evals.tasks import TASKS

    for spec in plan.evals:
        if spec.task == task and spec.margin is not None:
            return float(spec.margin)
    known = TASKS.get(task)
    return known.default_margin if known else 5.0


def comparison_pairs(plan: Plan) -> list[tuple[str, str]]:
    """(candidate, baseline) pairs: the plan's explicit pairs if it has them, else each candidate vs the baseline."""
    pairs = getattr(plan, "comparisons", None)
    if pairs is not None:
        return list(pairs)
    return [(name, plan.baseline) for name in plan.servers if name != plan.baseline]


def summarize_evals(run_dir: RunDir, plan: Plan) -> dict[str, Any]:
    scores: list[dict[str, Any]] = []
    per_server: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    for server in run_dir.eval_servers():
        for task in run_dir.eval_tasks(server):
            items = item_scores(run_dir, server, task)
            per_server[(server, task)] = items
            values = [items[key] for key in sorted(items)]
            scores.append({
                "server": server,
                "task": task,
                "data": data_label(run_dir, server, task),
                "n_items": len(values),
                "passes": passes_of(run_dir, server, task),
                "score": _finite(stats.mean(values)) if values else None,
                "stderr": _finite(stats.standard_error(values)) if values else None,
            })

    verdicts: list[dict[str, Any]] = []
    tasks = sorted({task for _, task in per_server})
    for task in tasks:
        for candidate, baseline in comparison_pairs(plan):
            base = per_server.get((baseline, task))
            cand = per_server.get((candidate, task))
            if base is None or cand is None:
                continue
            keys = sorted(set(base) & set(cand))
            passes = max(1, min(passes_of(run_dir, candidate, task), passes_of(run_dir, baseline, task)))
            comparison = stats.paired_comparison([cand[k] for k in keys], [base[k] for k in keys], margin_for(plan, task),
                                                 resolution=100.0 / passes)
            row = {"task": task, "candidate": candidate, "baseline": baseline,
                   "speculative": plan.servers[candidate].speculative}
            for key, value in comparison.as_dict().items():
                row[key] = _finite(value) if isinstance(value, float) else value
            verdicts.append(row)
    return {"scores": scores, "verdicts": verdicts}
