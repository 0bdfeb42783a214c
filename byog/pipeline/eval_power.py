"""``byog plan``'s accuracy view: per eval and tier, the predicted false-fail rate and power of the
gate (``byog.analysis.gate_power``), and which evals would be "screening" before anything launches.

The model is the task registry's prior, or one fitted to the per-item data of an earlier run
directory (the plan's baseline and first candidate for that task, where the run scored both;
for greedy decoding the re-draw rate is the one their discordance implies): the ``--from-run``
directory, else the newest run under ``runs_dir()`` of the same plan's smoke tier (``smoke_run_of``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from byog.analysis.eval_summary import margin_for
from byog.analysis.gate_power import (
    ItemModel,
    difference_pmf,
    model_from_items,
    planned_for_spec,
    pmf_moments,
    prior_model,
)
from byog.analysis.strata import planned_no_power
from byog.core.paths import RunDir
from byog.core.settings import runs_dir
from byog.plans.load import parse_plan
from byog.plans.tasks import TASKS
from byog.plans.tiers import TIERS, apply_tier, eval_items, tiered_plan_yaml
from byog.schemas.plan import EvalSpec, Plan


def _pass_scores(run_dir: RunDir, server: str, task: str) -> dict[str, list[float]] | None:
    """item id -> its pass scores (0..1), or None when the run has no complete eval of it."""
    import pyarrow.parquet as pq

    if not run_dir.eval_complete(server, task):
        return None
    table = pq.read_table(run_dir.eval_items(server, task), columns=["item_id", "score"])
    out: dict[str, list[float]] = {}
    for item_id, score in zip(table.column("item_id").to_pylist(), table.column("score").to_pylist(), strict=True):
        out.setdefault(str(item_id), []).append(float(cast(float, score)))  # a required column: never null
    return out


def model_from_run(run_dir: Path, task: str, sampled: bool) -> ItemModel | None:
    """The Beta-binomial model of ``task`` fitted to an earlier run (None when it did not score it)."""
    folder = RunDir(run_dir)
    prior = prior_model(task)
    if prior is None or not folder.plan_yaml.is_file():
        return None
    old = parse_plan(folder.plan_yaml.read_text(encoding="utf-8"), str(folder.plan_yaml))
    baseline = _pass_scores(folder, old.baseline, task)
    if not baseline:
        return None
    candidate = next(
        (s for c, b in old.comparisons if b == old.baseline for s in [_pass_scores(folder, c, task)] if s), None
    )
    return model_from_items(baseline, candidate, sampled, prior, source=f"run {run_dir}")


def smoke_run_of(plan: Plan, runs_root: Path | None = None) -> Path | None:
    """The newest run directory under ``runs_root`` that ran ``plan``'s smoke tier and completed an
    eval (its recorded plan.yaml is the smoke tier's, byte for byte); None when there is none.
    ``runs_root``: default ``runs_dir()`` (``$BYOG_RUNS_DIR``, else ./runs)."""
    runs_root = runs_root or runs_dir()
    if not plan.evals or not runs_root.is_dir():
        return None
    smoke = tiered_plan_yaml(apply_tier(plan, "smoke"))
    found = []
    for plan_yaml in runs_root.glob("*/plan.yaml"):
        folder = RunDir(plan_yaml.parent)
        if plan_yaml.read_text(encoding="utf-8") != smoke:
            continue
        if any(folder.eval_complete(s, e.task) for e in plan.evals for s in plan.servers_for(e)):
            found.append((plan_yaml.stat().st_mtime, plan_yaml.parent))
    return max(found)[1] if found else None


def eval_prior(plan: Plan, from_run: Path | None, runs_root: Path | None = None) -> tuple[Path | None, str]:
    """Which earlier run the eval model comes from, and a sentence saying so."""
    if from_run is not None:
        return from_run, f"fitted to {from_run} (--from-run)"
    smoke = smoke_run_of(plan, runs_root)
    if smoke is not None:
        return smoke, f"fitted to {smoke}, this plan's smoke-tier run (--from-run to choose another)"
    where = runs_root or runs_dir()
    return None, f"the task registry's prior (no --from-run, and no smoke-tier run of this plan under {where})"


def eval_power_rows(plan: Plan, from_run: Path | None = None) -> list[dict[str, Any]]:
    """One row per (tier, eval): the design and its predicted false-fail rate and power."""
    rows = []
    models: dict[tuple[str, bool], ItemModel | None] = {}
    for tier in TIERS:
        cut = apply_tier(plan, tier)
        for spec in cut.evals:
            task = TASKS.get(spec.task)
            if task is None:
                continue
            sampled = task.sampled_with(spec.gen_kwargs)
            key = (spec.task, sampled)
            if key not in models:
                models[key] = (model_from_run(from_run, spec.task, sampled) if from_run else None) or prior_model(
                    spec.task
                )
            margin = margin_for(cut, spec.task)
            planned = planned_for_spec(spec, margin, models[key])
            if planned is None:
                continue
            rows.append(
                {
                    "tier": tier,
                    "task": spec.task,
                    "n": eval_items(spec),
                    "passes": spec.passes,
                    "decoding": "sampled" if sampled else "greedy",
                    "margin": margin,
                    "false_fail": planned.false_fail,
                    "power": planned.power,
                    "sound": planned.sound,
                    "model": planned.model,
                    "strata": _strata_power(spec, models[key], margin, sampled),
                }
            )
    return rows


def _strata_power(spec: EvalSpec, model: ItemModel | None, margin: float, sampled: bool) -> dict[str, Any] | None:
    """An eval with operating points: the items a stratum gets and the planned power of the answer "no"
    (accuracy does not depend on the point, docs/statistics.md §1b); None without points."""
    if not spec.operating_points or model is None:
        return None
    _, sd = pmf_moments(*difference_pmf(model, spec.passes, sampled))
    n, points = eval_items(spec), len(spec.operating_points)
    return {
        "points": sorted(spec.operating_points),
        "items_per_point": n // points,
        "no_power": planned_no_power(sd, n, points, margin),
    }
