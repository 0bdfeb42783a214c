"""Operating-point strata of an eval (docs/statistics.md §1b): which items run at which concurrency,
and the per-stratum verdict.

A plan's ``EvalSpec.operating_points`` (e.g. [1, 64]) names the concurrencies its accuracy claim
lives at. Each item belongs to one stratum, fixed by its identity alone (``operating_point``): the
first 8 bytes of sha256(SALT, item id, item sha256) modulo the number of points picks a point of the
ascending list. The same item is in the same stratum on every server (the strata are paired) and in
every run, and verify recomputes the assignment from items.parquet without knowing the order the
runner read the data in. The strata are a seeded random partition, so each is a random sample of
the eval's items; their sizes are binomial around n / points, not forced equal.

Per stratum the paired gate of ``byog.analysis.stats.paired_comparison`` judges the items of that
stratum (the same method the overall verdict uses for that score type); every stratum's difference
is then held against the smallest point's (``stats.stratum_contrast``, Bonferroni over the
contrasts): accuracy depends on the operating point "yes" when a contrast is different, "no" when
every contrast is equivalent, else "undetermined".
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Final, Literal

from byog.analysis import stats
from byog.analysis.counters import GENERATION_TOKENS, ITERATIONS, counter_deltas
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.core.safe_text import one_line
from byog.plans.tasks import TASKS
from byog.schemas.evals import StrataRecord, StratumContrast, StratumVerdict
from byog.schemas.plan import Plan
from byog.schemas.tables import read_columns

SALT: Final = "byog-operating-point/1"
ASSIGNMENT: Final = (
    f"points ascending, index = first 8 bytes (big-endian) of sha256('{SALT}' NUL item_id NUL item_sha256) mod points"
)

Key = tuple[str, str]  # (item_id, item_sha256)


def operating_point(item_id: str, item_sha256: str, points: Sequence[int]) -> int:
    """The operating point whose stratum the item is in (module docstring)."""
    ordered = sorted(points)
    digest = hashlib.sha256(f"{SALT}\0{item_id}\0{item_sha256}".encode()).digest()
    return ordered[int.from_bytes(digest[:8], "big") % len(ordered)]


def depends(contrasts: Sequence[StratumContrast]) -> Literal["yes", "no", "undetermined"]:
    if any(c.verdict == "different" for c in contrasts):
        return "yes"
    if contrasts and all(c.verdict == "equivalent" for c in contrasts):
        return "no"
    return "undetermined"


def strata_record(
    keys: Sequence[Key],
    cand: Sequence[float],
    base: Sequence[float],
    points: Sequence[int],
    margin: float,
    resolution: float,
    score_interval: bool = True,
    batch: tuple[Mapping[int, float], Mapping[int, float]] = ({}, {}),
) -> StrataRecord:
    """Per stratum, the paired verdict on the paired items ``keys`` (scores in points, same order), and
    every stratum's difference against the smallest point's. ``batch``: the candidate's and the
    baseline's output tokens per engine step per point (``measured_batch``; a point absent: unknown)."""
    ordered = sorted(points)
    strata: list[StratumVerdict] = []
    for point in ordered:
        at = [i for i, (item_id, sha) in enumerate(keys) if operating_point(item_id, sha, ordered) == point]
        comparison = stats.paired_comparison(
            [cand[i] for i in at], [base[i] for i in at], margin, resolution, score_interval
        )
        strata.append(
            StratumVerdict(
                operating_point=point,
                candidate_tokens_per_step=batch[0].get(point),
                baseline_tokens_per_step=batch[1].get(point),
                **comparison.model_dump(),
            )
        )
    reference = strata[0]
    contrasts = [
        stats.stratum_contrast(s, reference, s.operating_point, reference.operating_point, len(strata) - 1)
        for s in strata[1:]
    ]
    return StrataRecord(
        points=ordered, assignment=ASSIGNMENT, strata=strata, contrasts=contrasts, depends=depends(contrasts)
    )


def planned_no_power(sd_d: float, n: int, points: int, margin: float) -> float:
    """P(the answer is "no") when the difference is the same at every point, before the run (``byog plan``).

    ``sd_d``: the sd of one item's paired difference d_i (points) under the plan's item model; the n
    items split evenly into ``points`` strata, so each contrast's SE is sd_d sqrt(2 points / n), and its
    TOST at alpha / contrasts (``stats.tost_power``, the normal approximation with SE known, df of the
    two strata) must say equivalent for every contrast (taken as independent: they share the
    reference, so this is a lower bound for 3 or more points)."""
    per_stratum = n // points
    if per_stratum < 2 or sd_d <= 0:
        return 0.0
    contrasts = points - 1
    se = sd_d * math.sqrt(2.0 / per_stratum)
    return float(stats.tost_power(margin, se, 2 * per_stratum - 1, stats.ALPHA / contrasts) ** contrasts)


def server_batch(before: str | None, after: str | None) -> dict[str, float | None] | None:
    """What the server's own counters say of one stratum (its /metrics before and after the stratum ran):
    output tokens, engine steps, and output tokens per engine step, the mean number of sequences the
    server advanced per step (prefill-only steps count too, so it reads low, never high, without
    speculative decoding). None where the server exports no /metrics or lacks the counters."""
    deltas = counter_deltas(before, after)
    tokens, steps = deltas.get(GENERATION_TOKENS), deltas.get(ITERATIONS)
    if not isinstance(tokens, float) or not isinstance(steps, float):
        return None
    return {"output_tokens": tokens, "engine_steps": steps, "tokens_per_step": _per_step(tokens, steps)}


def _per_step(tokens: float, steps: float) -> float | None:
    """tokens / steps; None without a step (or where the quotient overflows: summary floats are finite)."""
    per_step = tokens / steps if steps > 0 else math.inf
    return per_step if math.isfinite(per_step) else None


def measured_batch(run_dir: RunDir, server: str, task: str) -> dict[int, float]:
    """Operating point -> the server's output tokens per engine step over that stratum, recomputed from
    the counts its results.json records (``extra.strata.server_batch``, as ``server_batch`` wrote them).
    A point is absent where the server recorded none: no /metrics, no steps, a results.json from before
    the counts were kept, or one whose counts are not finite numbers (a bundle is hostile input)."""
    try:
        recorded = read_json(run_dir.eval_results(server, task))["extra"]["strata"]["server_batch"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    found: dict[int, float] = {}
    for point, counts in recorded.items() if isinstance(recorded, dict) else ():
        if not isinstance(counts, dict) or not (point.isascii() and point.isdigit() and len(point) <= 9):
            continue
        tokens, steps = _count(counts.get("output_tokens")), _count(counts.get("engine_steps"))
        if tokens is not None and steps is not None and (per_step := _per_step(tokens, steps)) is not None:
            found[int(point)] = per_step
    return found


def _count(value: object) -> float | None:
    """A counter delta as JSON holds it (a finite, non-negative number, not a boolean); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def stratum_problems(run_dir: RunDir, plan: Plan) -> list[str]:
    """One sentence per (server, eval) whose per-item records did not run each item at its stratum's
    operating point: a row whose ``num_concurrent`` is not the point its id and sha256 assign (or is
    not recorded) would move an item from one stratum's verdict into another's."""
    problems: list[str] = []
    for spec in plan.evals:
        if not spec.operating_points:
            continue
        task = TASKS[spec.task].name if spec.task in TASKS else spec.task
        for server in plan.servers_for(spec):
            if not run_dir.eval_complete(server, task):
                continue
            ids, shas, ran = _recorded(run_dir, server, task)
            points = spec.operating_points
            wrong = [(i, s, r) for i, s, r in zip(ids, shas, ran, strict=True) if r != operating_point(i, s, points)]
            if wrong:
                i, s, r = wrong[0]
                problems.append(
                    f"{one_line(task, 60)} on {one_line(server, 60)}: {len(wrong)} of {len(ids)} rows ran outside "
                    f"their operating point's stratum (e.g. item {one_line(i, 60)} at {r}, its stratum is "
                    f"{operating_point(i, s, points)})"
                )
    return problems


def _recorded(run_dir: RunDir, server: str, task: str) -> tuple[list[str], list[str], list[int | None]]:
    """Each row's item id, sha256 and num_concurrent (None throughout: a file of item schema 2 or older)."""
    path = run_dir.eval_items(server, task)
    cols = read_columns(path, ("item_id", "item_sha256"))
    try:
        ran = read_columns(path, ("num_concurrent",))["num_concurrent"]
    except KeyError:
        ran = [None] * len(cols["item_id"])
    return cols["item_id"], cols["item_sha256"], ran
