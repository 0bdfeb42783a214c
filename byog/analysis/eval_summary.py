"""The accuracy part of summary.json, derived only from the raw eval files of a run directory.

Pure and deterministic: ``summarize_evals(run_dir, plan)`` reads ``evals/<server>/<task>/items.parquet``
(and the data label and each stratum's server counts from ``results.json``), so ``byog verify`` can
recompute it and get the same numbers. Floats are finite or None (JSON null), never NaN.

- scores: per (server, task), with the data label from results.json (so fixture and generated
  rows never pass for the real benchmark): per-item score = mean over the K passes (points 0-100); the task
  score = mean over items; stderr = sd(item scores) / sqrt(n).
- verdicts: per (task, candidate vs the plan's baseline, speculative = the candidate's
  ServerConfig.speculative), on the items both servers scored (paired by item id and item
  sha256, so a changed item is never paired), through ``byog.analysis.stats.paired_comparison``
  with the plan's margin for the task (EvalSpec.margin, else the task's default margin) and a
  score resolution of 100 / K points (K = the pair's passes; it floors SE_d when all d_i are equal);
  binary items (one pass, scores 0 or 100) are judged by Tango's score statistic, others by the
  paired t, and the verdict's ``method`` says which.
  Each verdict also carries the planned false-fail rate of the plan's design for the eval
  (``byog.analysis.gate_power``, the registry's prior) and ``screening`` when it is over 5%, and the
  degenerate cases of ``byog.analysis.degenerate`` (then the verdict reads "degenerate").
- sequential: where the plan's eval sets ``looks``, the group-sequential gate
  (``byog.analysis.group_sequential``) on the paired items in their natural id order; its stopping
  look's decision is the verdict (unless degenerate) and every look it took is in the record.
- strata: where the plan's eval sets ``operating_points``, the paired gate per stratum and whether the
  difference depends on the operating point (``byog.analysis.strata``), with each server's output
  tokens per engine step over the stratum (the counts its results.json records: ``measured_batch``).
- observed: a greedy single-pass verdict that is not degenerate also carries the pair's observed
  discordance (items whose scores differ / n), the re-draw rate it implies, the false-fail rate and
  power of the same design at that rate, and the least n sound there; a design that rate makes
  unsound is ``screening`` with ``screening_label`` "screening (observed re-draw X% > planned Y%)".
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from byog.analysis import group_sequential, stats
from byog.analysis.degenerate import degenerate_cases
from byog.analysis.gate_power import ItemModel, ObservedDesign, PlannedPower, observed_design, planned_for_spec
from byog.analysis.strata import measured_batch, strata_record
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.plans.tasks import TASKS
from byog.schemas.evals import EvalScore, EvalSummary, EvalVerdict, SequentialRecord
from byog.schemas.plan import EvalSpec, Plan


def item_scores(run_dir: RunDir, server: str, task: str) -> dict[tuple[str, str], float]:
    """(item_id, item_sha256) -> mean score over passes, in points."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(run_dir.eval_items(server, task)).read(
        columns=["item_id", "item_sha256", "score"], use_threads=False
    )
    return scores_of(zip(*(table.column(c).to_pylist() for c in ("item_id", "item_sha256", "score")), strict=True))


def scores_of(rows: Iterable[tuple[str, str, float]]) -> dict[tuple[str, str], float]:
    """(item_id, item_sha256) -> mean score over passes, in points, from (id, sha, score) rows."""
    sums: dict[tuple[str, str], list[float]] = {}
    for item_id, sha, score in rows:
        sums.setdefault((item_id, sha), []).append(float(score))
    return {key: 100.0 * math.fsum(vals) / len(vals) for key, vals in sums.items()}


def paired_keys(cand: dict[tuple[str, str], float], base: dict[tuple[str, str], float]) -> list[tuple[str, str]]:
    """The items both servers scored (same id and sha256), in the order the looks read them."""
    return sorted(set(base) & set(cand), key=group_sequential.item_order)


def paired(cand: dict[tuple[str, str], float], base: dict[tuple[str, str], float]) -> tuple[list[float], list[float]]:
    """The paired items' scores (``paired_keys``' order)."""
    keys = paired_keys(cand, base)
    return [cand[k] for k in keys], [base[k] for k in keys]


def passes_of(run_dir: RunDir, server: str, task: str) -> int:
    import pyarrow.parquet as pq

    table = pq.ParquetFile(run_dir.eval_items(server, task)).read(columns=["pass_index"], use_threads=False)
    return len(set(table.column("pass_index").to_pylist()))


def data_label(run_dir: RunDir, server: str, task: str) -> str | None:
    """What the items were: e.g. "openai/gsm8k (local copy)", "MRCR v2", "generated ...", "fixture ..."."""
    try:
        return str(read_json(run_dir.eval_results(server, task))["data"]["label"])
    except (KeyError, TypeError, ValueError):
        return None


def margin_for(plan: Plan, task: str) -> float:
    for spec in plan.evals:
        if spec.task == task and spec.margin is not None:
            return float(spec.margin)
    known = TASKS.get(task)
    return known.default_margin if known else 5.0


def spec_for(plan: Plan, task: str, candidate: str, baseline: str) -> EvalSpec | None:
    """The plan's eval of ``task`` that runs on both servers (the first, if several do)."""
    for spec in plan.evals:
        servers = plan.servers_for(spec)
        if spec.task == task and candidate in servers and baseline in servers:
            return spec
    return None


def pairs_judged_by(plan: Plan, spec: EvalSpec, server: str) -> list[tuple[str, str]]:
    """The (candidate, baseline) comparisons ``server`` is in whose verdict on ``spec.task`` this eval makes."""
    return [(c, b) for c, b in plan.comparisons if server in (c, b) and spec_for(plan, spec.task, c, b) is spec]


def _verdict(
    run_dir: RunDir,
    plan: Plan,
    task: str,
    candidate: str,
    baseline: str,
    keys: list[tuple[str, str]],
    cand: list[float],
    base: list[float],
    passes: int,
    score_interval: bool,
) -> EvalVerdict:
    margin = margin_for(plan, task)
    resolution = 100.0 / passes
    comparison = stats.paired_comparison(cand, base, margin, resolution, score_interval)
    spec = spec_for(plan, task, candidate, baseline)
    planned = planned_for_spec(spec, margin) if spec is not None else None
    n = len(cand)
    discordant = sum(1 for c, b in zip(cand, base, strict=True) if c != b)
    found = degenerate_cases(
        candidate_score=stats.mean(cand) if cand else None,
        baseline_score=stats.mean(base) if base else None,
        n=n,
        discordant=discordant,
        margin=margin,
        resolution=resolution,
        t95=stats.t_quantile(1 - stats.ALPHA, n - 1) if n >= 2 else None,
        min_baseline_score=spec.min_baseline_score if spec is not None else None,
        method=comparison.method,
    )
    row = comparison.model_dump()
    sequential = _sequential(spec, cand, base, margin, resolution, score_interval)
    if sequential is not None:
        row["verdict"] = sequential.decision
    if found:
        row["verdict"] = "degenerate"
    observed = _observed(planned, n, margin, discordant, base) if planned and not found else None
    return EvalVerdict(
        task=task,
        candidate=candidate,
        baseline=baseline,
        speculative=plan.servers[candidate].speculative,
        discordant=discordant,
        planned_false_fail=planned.false_fail if planned else None,
        screening=(planned is not None and not planned.sound) or (observed is not None and not observed.sound),
        degenerate=[d.reason for d in found],
        degenerate_why=[d.why for d in found],
        planned_redraw=observed.planned_redraw if observed else None,
        observed_discordance=observed.discordance if observed else None,
        observed_redraw=observed.redraw if observed else None,
        observed_false_fail=observed.false_fail if observed else None,
        observed_power=observed.power if observed else None,
        observed_sound=observed.sound if observed else None,
        sound_n=observed.sound_n if observed else None,
        screening_label=observed.label() if observed else None,
        sequential=sequential,
        strata=(
            strata_record(
                keys,
                cand,
                base,
                spec.operating_points,
                margin,
                resolution,
                score_interval,
                (measured_batch(run_dir, candidate, task), measured_batch(run_dir, baseline, task)),
            )
            if spec is not None and spec.operating_points
            else None
        ),
        **row,
    )


def _sequential(
    spec: EvalSpec | None,
    cand: list[float],
    base: list[float],
    margin: float,
    resolution: float,
    score_interval: bool = True,
) -> SequentialRecord | None:
    """The group-sequential gate where the plan sets looks (items in ``group_sequential.item_order``)."""
    if spec is None or spec.looks is None or len(cand) < 2:
        return None
    design = group_sequential.SequentialDesign.of(spec)
    diffs = [c - b for c, b in zip(cand, base, strict=True)]
    method = stats.method_for(cand, base, resolution, score_interval)  # the fixed gate's statistic at every look
    # with a limit, the looks are fractions of it, fixed before any item ran; the runner may stop
    # before the limit, and verify refuses records that end before a look without a stop
    return group_sequential.sequential_record(diffs, margin, design, resolution, spec.limit, method)


def sequential_for(
    plan: Plan,
    task: str,
    candidate: str,
    baseline: str,
    cand: dict[tuple[str, str], float],
    base: dict[tuple[str, str], float],
    passes: int,
) -> SequentialRecord | None:
    """The gate on the items scored so far, as the summary will compute it (the runner's stop test)."""
    c, b = paired(cand, base)
    spec = spec_for(plan, task, candidate, baseline)
    return _sequential(spec, c, b, margin_for(plan, task), 100.0 / max(1, passes))


def _observed(
    planned: PlannedPower, n: int, margin: float, discordant: int, base: list[float]
) -> ObservedDesign | None:
    """A greedy single-pass design judged at the discordance this pair showed (``observed_design``);
    None for sampled decoding (there the passes measure the spread) or fewer than 2 items."""
    if planned.sampled or planned.passes != 1 or n < 2:
        return None
    model = ItemModel(**planned.model)
    return observed_design(model, n, margin, discordant, stats.mean(base) / 100.0)


def summarize_evals(run_dir: RunDir, plan: Plan, score_interval: bool = True) -> EvalSummary:
    """``score_interval=False``: binary items judged by the paired t, as before summary schema 11."""
    scores: list[EvalScore] = []
    per_server: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    for server in run_dir.eval_servers():
        for task in run_dir.eval_tasks(server):
            items = item_scores(run_dir, server, task)
            per_server[(server, task)] = items
            values = [items[key] for key in sorted(items)]
            scores.append(
                EvalScore(
                    server=server,
                    task=task,
                    data=data_label(run_dir, server, task),
                    n_items=len(values),
                    passes=passes_of(run_dir, server, task),
                    score=stats.mean(values) if values else None,
                    stderr=stats.standard_error(values) if values else None,
                )
            )

    verdicts: list[EvalVerdict] = []
    tasks = sorted({task for _, task in per_server})
    for task in tasks:
        for candidate, baseline in plan.comparisons:
            base = per_server.get((baseline, task))
            cand = per_server.get((candidate, task))
            if base is None or cand is None:
                continue
            keys = paired_keys(cand, base)
            c, b = [cand[k] for k in keys], [base[k] for k in keys]
            passes = max(1, min(passes_of(run_dir, candidate, task), passes_of(run_dir, baseline, task)))
            verdicts.append(_verdict(run_dir, plan, task, candidate, baseline, keys, c, b, passes, score_interval))
    return EvalSummary(scores=scores, verdicts=verdicts)
