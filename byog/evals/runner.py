"""Run eval tasks against one server and write their raw records into the run directory.

``run_evals_for_server`` is what the pipeline calls for each server of a plan; ``run_task`` is the
one code path behind it and behind ``byog eval --endpoint``. Per task it writes, atomically,
``evals/<server>/<task>/items.parquet`` (one row per item and pass) and then ``results.json``
(the definition, data hashes, sampling, endpoint and score); a task whose two files exist is
skipped, so a rerun resumes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from byog.analysis import group_sequential, stats
from byog.analysis.eval_summary import item_scores, pairs_judged_by, passes_of, scores_of, sequential_for
from byog.analysis.strata import ASSIGNMENT as STRATA_ASSIGNMENT
from byog.analysis.strata import operating_point, server_batch
from byog.core.errors import ByogError, UsageError
from byog.core.io import atomic_write_json, read_json
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter, Reporter
from byog.core.settings import hub_data_dir, resolve_data_dir
from byog.evals import mrcr
from byog.evals.capacity import Concurrency, at_operating_points, eval_concurrency
from byog.evals.data import (
    DataSource,
    hub_offline,
    item_sha256,
    pull,
    read_split,
    resolve_source,
)
from byog.evals.lm_eval_adapter import generation_kwargs, item_identity, run_pass
from byog.evals.lockstep import Lockstep, Partner
from byog.evals.mrcr_generate import DEFAULT_NEEDLES, generate_rows
from byog.evals.mrcr_grade import bin_label
from byog.evals.mrcr_tokens import token_counter
from byog.plans.tasks import TaskSpec, answer_tokens, check_eval_runs, get_task, stops_early
from byog.schemas.evals import INVALID_ANSWER, RAW_OUTPUT_CHARS, EvalItemRow, EvalResults, write_eval_items
from byog.schemas.plan import EvalSpec, Plan
from byog.schemas.server import Endpoint

GENERATED_TARGETS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class Looks:
    """A task run in look-sized chunks so the plan's group-sequential gate can stop it early."""

    sizes: list[int]  # items at each look, fractions of the plan's limit fixed before any item ran
    stop: Callable[[list[dict[str, Any]]], bool]  # the rows so far -> the gate stopped (every pair)
    lockstep: Lockstep | None = None  # a partner at once or in turns, in the same looks (``byog.evals.lockstep``)


@dataclass(frozen=True)
class TaskRun:
    """What one task produced: the rows for items.parquet and the results.json object."""

    rows: list[dict[str, Any]]
    results: dict[str, Any]


# --- endpoint facts ------------------------------------------------------------------------------


def describe_endpoint(
    base_url: str, model: str | None = None, tokenizer: str | None = None, timeout_s: float = 30.0
) -> Endpoint:
    """An Endpoint for a URL: the served model and max_model_len from /v1/models."""
    base_url = base_url.rstrip("/")
    if base_url.endswith("/v1"):
        base_url = base_url[: -len("/v1")]
    try:
        body = httpx.get(f"{base_url}/v1/models", timeout=timeout_s).json()
    except Exception as err:
        raise ByogError(
            f"no OpenAI-compatible server answers at {base_url} ({type(err).__name__}); start one with `byog serve`",
            exit_code=3,
        ) from None
    cards = body.get("data") or []
    if not cards:
        raise ByogError(f"{base_url}/v1/models lists no model", exit_code=3)
    card = next((c for c in cards if c.get("id") == model), None) if model else cards[0]
    if card is None:
        raise UsageError(
            f"the server at {base_url} does not serve '{model}' (it serves {[c.get('id') for c in cards]})"
        )
    return Endpoint(base_url=base_url, model=card["id"], tokenizer=tokenizer, max_model_len=card.get("max_model_len"))


# --- the two runners ---------------------------------------------------------------------------


def _lm_eval_task(
    task: TaskSpec,
    source: DataSource,
    endpoint: Endpoint,
    seeds: list[int],
    limit: int | None,
    num_concurrent: int,
    overrides: dict[str, Any],
    status: Any,
    looks: Looks | None = None,
    points: list[int] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any], dict[str, Any]]:
    gen = generation_kwargs(task, overrides)
    if points:
        return _stratified(task, source, endpoint, seeds, limit, points, gen, status)
    rows: list[dict[str, Any]] = []
    runner: dict[str, Any] = {}
    chunks: list[list[int] | None] = [None]
    record: dict[str, Any] | None = None
    if looks is not None and not source.files:
        # lm-eval streams the hub copy: the items' ids, hence the looks' order, are unknown before they run
        record = {"planned_items": looks.sizes[-1], "looks_run": 0, "items_run": looks.sizes[-1], "stopped": False}
        record["why"] = "every item ran: no local data files to order the looks by before the items run"
        looks = None
    elif looks is not None:
        order = look_order(task, source, looks.sizes[-1])
        chunks = [order[a:b] for a, b in zip([0, *looks.sizes], looks.sizes, strict=False)]
    lockstep = looks.lockstep if looks is not None else None
    read_back_s = 0.0  # the seconds earlier attempts or turns spent on the looks read back here
    for j, chunk in enumerate(chunks):

        def run(chunk: list[int] | None = chunk) -> list[dict[str, Any]]:
            return _lm_eval_passes(task, source, endpoint, seeds, limit, num_concurrent, gen, status, chunk, runner)

        made = _look_rows(lockstep, j + 1, chunk, seeds, run, runner)
        rows.extend(made[0])
        runner.update(made[1])
        read_back_s += made[2]
        if looks is None:
            continue
        status(f"{task.name}: look {j + 1}/{len(chunks)} at {looks.sizes[j]} items")
        record = {"planned_items": looks.sizes[-1], "looks_run": j + 1, "items_run": looks.sizes[j]}
        if read_back_s:
            record["read_back_wall_s"] = round(read_back_s, 3)
        if lockstep:
            record["lockstep_with"] = lockstep.partner.server
            if lockstep.partner.in_turns:
                record["in_turns"] = True
            if not lockstep.wait(j + 1, status):  # the partner ended first: every item, no look judged
                record.update(looks_run=j, items_run=looks.sizes[-1], stopped=False, why=lockstep.gave_up(j + 1))
                looks = None
                continue
        record["stopped"] = looks.stop(rows)
        if record["stopped"]:
            break
    return rows, gen, runner, ({"sequential": record} if record else {})


def _look_rows(
    lockstep: Lockstep | None,
    look: int,
    chunk: list[int] | None,
    seeds: list[int],
    run: Callable[[], list[dict[str, Any]]],
    runner: dict[str, Any],
) -> tuple[list[dict[str, Any]], Any, float]:
    """A look's rows, runner facts and the seconds an earlier attempt or turn spent on it, read back;
    else run now (0 such seconds) and saved for a later one."""
    made = lockstep.saved(look, chunk, seeds) if lockstep else None
    if made is not None:
        return made
    started = time.perf_counter()
    ran = run()
    if lockstep:
        lockstep.save(look, chunk, seeds, ran, runner, round(time.perf_counter() - started, 3))
    return ran, {}, 0.0


def strata_of(task: TaskSpec, source: DataSource, limit: int | None, points: list[int]) -> dict[int, list[int]]:
    """The doc indices of each operating point's stratum among the first ``limit`` docs
    (``byog.analysis.strata.operating_point``: from each item's id and sha256, so the same on every server)."""
    if not source.files:
        raise UsageError(
            f"{task.name}: operating points need the items' ids before they run, and lm-eval would stream "
            "this task from the hub: pull its data first (`byog data pull`)"
        )
    rows = read_split(source, task.eval_split)
    n = len(rows) if limit is None else min(limit, len(rows))
    strata: dict[int, list[int]] = {p: [] for p in sorted(points)}
    for i in range(n):
        strata[operating_point(*item_identity(task, i, rows, {}), points)].append(i)
    return strata


def _stratified(
    task: TaskSpec,
    source: DataSource,
    endpoint: Endpoint,
    seeds: list[int],
    limit: int | None,
    points: list[int],
    gen: dict[str, Any],
    status: Any,
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Each operating point's stratum through lm-eval at num_concurrent = that point, every pass."""
    rows: list[dict[str, Any]] = []
    runner: dict[str, Any] = {}
    strata = strata_of(task, source, limit, points)
    batch: dict[str, dict[str, float | None] | None] = {}
    for point, docs in strata.items():
        if not docs:
            continue
        status(f"{task.name}: operating point {point}, {len(docs)} items")
        before = _metrics(endpoint)
        made = _lm_eval_passes(task, source, endpoint, seeds, None, point, gen, status, docs, runner)
        batch[str(point)] = server_batch(before, _metrics(endpoint))
        rows.extend({**row, "num_concurrent": point} for row in made)
    runner["model_args"] = {k: v for k, v in runner.get("model_args", {}).items() if k != "num_concurrent"}
    record = {
        "points": sorted(points),
        "assignment": STRATA_ASSIGNMENT,
        "items": {str(p): len(docs) for p, docs in strata.items()},
        "note": "each stratum's requests were sent with lm-eval's num_concurrent = its point: the server's "
        "batch was at most that many of them; server_batch: the server's own counters over the stratum",
        "server_batch": batch,
    }
    return rows, gen, runner, {"strata": record}


def _metrics(endpoint: Endpoint) -> str | None:
    """The server's Prometheus /metrics, verbatim; None where it serves none."""
    try:
        response = httpx.get(f"{endpoint.base_url}/metrics", timeout=30.0)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


def look_order(task: TaskSpec, source: DataSource, n: int) -> list[int]:
    """The first ``n`` docs' indices in the order the gate reads items (``group_sequential.item_order``)."""
    rows = read_split(source, task.eval_split)
    if len(rows) < n:
        raise UsageError(
            f"{task.name} has {len(rows)} items, fewer than the plan's limit {n} that its looks are fractions of"
        )
    ids = [item_identity(task, i, rows, {}) for i in range(n)]
    return sorted(range(n), key=lambda i: group_sequential.item_order(ids[i]))


def _lm_eval_passes(
    task: TaskSpec,
    source: DataSource,
    endpoint: Endpoint,
    seeds: list[int],
    limit: int | None,
    num_concurrent: int,
    gen: dict[str, Any],
    status: Any,
    samples: list[int] | None,
    runner: dict[str, Any],
) -> list[dict[str, Any]]:
    """Every pass (seed) over the first ``limit`` items or the ``samples`` doc indices."""
    rows: list[dict[str, Any]] = []
    for k, seed in enumerate(seeds):
        status(f"{task.name}: pass {k + 1}/{len(seeds)} (seed {seed})")
        items, made = run_pass(
            task, source, endpoint, seed=seed, limit=limit, num_concurrent=num_concurrent, gen=gen, samples=samples
        )
        # where items.parquet keeps the server's text (byog.schemas.evals.EvalItemRow.raw_output)
        runner.update(made, raw_output={"kept_for": f"{INVALID_ANSWER} answers", "max_chars": RAW_OUTPUT_CHARS})
        rows.extend(
            {
                "item_id": it.item_id,
                "item_sha256": it.item_sha256,
                "pass_index": k,
                "seed": seed,
                "extracted_answer": it.extracted_answer,
                "target": it.target,
                "score": it.score,
                "n_output_tokens": None,
                "bin": None,
                "raw_output": it.raw_output,
                "raw_output_chars": it.raw_output_chars,
            }
            for it in items
        )
    return rows


def _mrcr_rows(source: DataSource, limit: int | None, max_model_len: int) -> tuple[list[dict[str, Any]], list[str]]:
    if source.kind == "generated":
        targets = [t for t in GENERATED_TARGETS if t <= max_model_len * 0.75] or [min(GENERATED_TARGETS)]
        n = limit or 2 * len(targets)
        per_target = max(1, math.ceil(n / len(targets)))
        rows: list[dict[str, Any]] = []
        ids: list[str] = []
        for target in targets:
            made = generate_rows(per_target, target, seed=0)
            rows.extend(made)
            ids.extend(f"gen-{target}:{i}" for i in range(len(made)))
        return rows, ids
    rows, ids = [], []
    for split, paths in sorted(source.files.items()):
        for path in paths:
            part = read_split(DataSource(source.kind, source.dataset_id, source.revision, None, {split: [path]}), split)
            rows.extend(part)
            stem = "fixture" if source.kind == "fixture" else path.stem
            ids.extend(f"{stem}:{i}" for i in range(len(part)))
    return rows, ids


def _mrcr_response_rows(
    items: list[mrcr.MrcrItem], graded: list[dict[str, Any]], pass_index: int, seed: int
) -> list[dict[str, Any]]:
    """One pass's graded responses as per-item rows."""
    return [
        {
            "item_id": item.item_id,
            "item_sha256": item_sha256(item.row),
            "pass_index": pass_index,
            "seed": seed,
            "extracted_answer": "prefix-ok" if result["prefix_ok"] else "no-prefix",
            "target": None,
            "score": result["score"],
            "n_output_tokens": result["n_output_tokens"],
            "bin": bin_label(item.total_tokens),
        }
        for item, result in zip(items, graded, strict=True)
    ]


def _mrcr_bins(out: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Items, responses and mean score (0-100) per context-length bin."""
    bins: dict[str, dict[str, Any]] = {}
    for row in out:
        entry = bins.setdefault(row["bin"], {"items": set(), "score_sum": 0.0, "responses": 0})
        entry["items"].add(row["item_id"])
        entry["responses"] += 1
        entry["score_sum"] += row["score"]
    return {
        label: {
            "items": len(b["items"]),
            "responses": b["responses"],
            "score": 100.0 * b["score_sum"] / b["responses"],
        }
        for label, b in sorted(bins.items())
    }


def _mrcr_items(
    task: TaskSpec,
    rows: list[dict[str, Any]],
    ids: list[str],
    counter: Any,
    client: httpx.Client,
    endpoint: Endpoint,
    max_len: int,
    limit: int | None,
) -> tuple[list[mrcr.MrcrItem], dict[str, int]]:
    """The rows that fit the server's context, as items; raises when none does."""
    items, skipped = mrcr.prepare_items(
        rows,
        ids,
        counter=counter,
        client=client,
        base_url=endpoint.base_url,
        model=endpoint.model,
        max_model_len=max_len,
        n_needles=DEFAULT_NEEDLES,
    )
    if limit is not None:
        items = items[:limit]
    if not items:
        raise ByogError(
            f"no {task.name} row fits the server's max_model_len {max_len} ({skipped['over_context']} too long)"
        )
    return items, skipped


def _mrcr_task(
    task: TaskSpec,
    source: DataSource,
    endpoint: Endpoint,
    seeds: list[int],
    limit: int | None,
    num_concurrent: int,
    overrides: dict[str, Any],
    status: Any,
    data_dir: Path | None,
    max_len: int,
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any], dict[str, Any]]:
    gen = dict(task.generation)
    gen.update(overrides)
    rows, ids = _mrcr_rows(source, limit, max_len)
    with httpx.Client(timeout=httpx.Timeout(3600.0, connect=30.0)) as client:
        counter = token_counter(data_dir, hub_offline(), client, endpoint.base_url, endpoint.model)
        status(f"{task.name}: counting tokens of {len(rows)} rows ({counter.name})")
        items, skipped = _mrcr_items(task, rows, ids, counter, client, endpoint, max_len, limit)
        out: list[dict[str, Any]] = []
        for k, seed in enumerate(seeds):
            status(f"{task.name}: pass {k + 1}/{len(seeds)} (seed {seed}), {len(items)} rows")
            graded = mrcr.run_pass(
                items,
                client=client,
                base_url=endpoint.base_url,
                model=endpoint.model,
                seed=seed,
                temperature=float(gen.get("temperature", 0.0)),
                top_p=gen.get("top_p"),
                max_model_len=max_len,
                num_concurrent=num_concurrent,
            )
            out.extend(_mrcr_response_rows(items, graded, k, seed))
    extra = {
        "token_counter": counter.name,
        "n_needles": DEFAULT_NEEDLES,
        "max_model_len": max_len,
        "skipped_rows": skipped,
        "bins": _mrcr_bins(out),
    }
    runner = {
        "name": "byog-mrcr",
        "api": "/v1/chat/completions",
        "num_concurrent": num_concurrent,
        "max_tokens": "min(max_model_len - prompt tokens, 2 x answer tokens + 64)",
    }
    return out, gen, runner, extra


# --- one task, one server ----------------------------------------------------------------------


def tokens_per_request(task: TaskSpec, context: int, overrides: dict[str, Any]) -> int:
    """The most KV cache one request of this task holds: its prompt reserve + answer length (within the
    server's ``context``: ``run_task`` refuses a task otherwise).

    MRCR's prompts fill the context up to 3/4 of it and its answers the rest: the whole context.
    """
    if task.runner == "mrcr":
        return context
    return task.prompt_reserve_tokens + answer_tokens(task, overrides)


def check_tasks_run(
    server: str, endpoint: Endpoint, run_dir: RunDir, tasks: Iterable[tuple[TaskSpec, Mapping[str, Any] | None]]
) -> None:
    """Refuse the first of the server's tasks still to run (each with its generation overrides) that its
    context cannot hold or that a server not saying its context cannot run
    (``byog.plans.tasks.check_eval_runs``), before any request of any of them: no task runs for an hour
    before a later one is refused."""
    for task, overrides in tasks:
        if not run_dir.eval_complete(server, task.name):
            check_eval_runs(task, server, endpoint.max_model_len, overrides)


def check_evals_fit(plan: Plan, server: str, endpoint: Endpoint, run_dir: RunDir) -> None:
    """``check_tasks_run`` over the plan's evals that name this server."""
    specs = [spec for spec in plan.evals if server in plan.servers_for(spec)]
    check_tasks_run(server, endpoint, run_dir, ((get_task(spec.task), spec.gen_kwargs) for spec in specs))


def recorded_server_info(run_dir: RunDir, server: str) -> Mapping[str, Any] | None:
    """The server's /server_info answer as server.json keeps it; None when it has none."""
    try:
        record = read_json(run_dir.server_record(server))
    except (OSError, ValueError):
        return None
    resolved = record.get("resolved") if isinstance(record, dict) else None
    info = resolved.get("server_info") if isinstance(resolved, dict) else None
    return info if isinstance(info, dict) else None


def _concurrency(
    task: TaskSpec,
    context: int,
    overrides: dict[str, Any],
    server_info: Mapping[str, Any] | None,
    planned: int | None,
    operating_points: list[int] | None,
) -> Concurrency:
    """The requests in flight the task runs at: the plan's, the server's capacity, or its operating points."""
    if operating_points and task.runner != "lm_eval":
        raise UsageError(f"{task.name}: operating points are run through lm-eval; byog's {task.runner} runner has none")
    concurrency = eval_concurrency(server_info, tokens_per_request(task, context, overrides), planned)
    return at_operating_points(concurrency, operating_points) if operating_points else concurrency


def _means(rows: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """(each item's mean over passes, each pass's mean over items), in points."""
    per_item: dict[str, list[float]] = {}
    per_pass: dict[int, list[float]] = {}
    for row in rows:
        per_item.setdefault(row["item_id"], []).append(row["score"])
        per_pass.setdefault(row["pass_index"], []).append(row["score"])
    return (
        [100.0 * stats.mean(v) for _, v in sorted(per_item.items())],
        [100.0 * stats.mean(v) for _, v in sorted(per_pass.items())],
    )


def _readable_source(task: TaskSpec, data_dir: Path | None) -> tuple[DataSource, Path | None]:
    """The task's data, and the folder it is read from: MRCR from the hub is pulled into a cache first
    (byog's own runner reads files: the pinned revision, then read from there)."""
    source = resolve_source(task, data_dir)
    if task.runner == "mrcr" and source.kind == "hub":
        data_dir = data_dir or hub_data_dir()
        pull([task], data_dir)
        source = resolve_source(task, data_dir)
    return source, data_dir


def run_task(
    task: TaskSpec,
    server: str,
    endpoint: Endpoint,
    *,
    seeds: list[int],
    limit: int | None,
    data_dir: Path | None,
    num_concurrent: int | None = None,
    server_info: Mapping[str, Any] | None = None,
    gen_overrides: dict[str, Any] | None = None,
    reporter: Reporter = NullReporter(),
    looks: Looks | None = None,
    operating_points: list[int] | None = None,
) -> TaskRun:
    """One task on one server. ``num_concurrent`` None: from the server's capacity (``server_info``,
    its /server_info answer; ``byog.evals.capacity``). ``looks``: run in look-sized chunks and stop
    where the group-sequential gate stops (lm-eval tasks). ``operating_points``: each item at the
    concurrency of its stratum (``byog.analysis.strata``; lm-eval tasks). A task whose prompts and
    answers the endpoint's max_model_len cannot hold, or any task where the endpoint does not say its
    max_model_len, is refused before anything is sent."""
    overrides = dict(gen_overrides or {})
    context = check_eval_runs(task, server, endpoint.max_model_len, overrides)
    concurrency = _concurrency(task, context, overrides, server_info, num_concurrent, operating_points)
    n = concurrency.num_concurrent
    source, data_dir = _readable_source(task, data_dir)
    started = time.perf_counter()
    with reporter.status(f"eval {task.name} on {server}") as live:

        def status(text: str) -> None:
            live.update(f"eval on {server}: {text}")

        if task.runner == "lm_eval":
            rows, gen, runner, extra = _lm_eval_task(
                task, source, endpoint, seeds, limit, n, overrides, status, looks, operating_points
            )
        else:
            rows, gen, runner, extra = _mrcr_task(
                task, source, endpoint, seeds, limit, n, overrides, status, data_dir, context
            )
    # this call's seconds, and those of earlier attempts or turns on the looks it read back
    wall_s = time.perf_counter() - started + (extra.get("sequential") or {}).get("read_back_wall_s", 0.0)
    # validate before anything is written; a row of the eval's one concurrency records it too
    rows = [EvalItemRow(**{"num_concurrent": n, **row}).model_dump() for row in rows]
    item_means, pass_scores = _means(rows)
    data = source.record()
    if task.runner == "mrcr" and source.kind in ("hub", "hub-cache"):
        data["label"] = "MRCR v2"
    results = EvalResults(
        server=server,
        task=task.record(),
        data=data,
        endpoint={
            "base_url": endpoint.base_url,
            "model": endpoint.model,
            "tokenizer": endpoint.tokenizer,
            "max_model_len": endpoint.max_model_len,
        },
        sampling={
            "passes": len(seeds),
            "seeds": list(seeds),
            "temperature": float(gen.get("temperature", 0.0) or 0.0),
            "do_sample": bool(gen.get("do_sample", False)),
            "top_p": gen.get("top_p"),
            "max_gen_toks": answer_tokens(task, overrides) if task.runner == "lm_eval" else gen.get("max_gen_toks"),
        },
        runner=runner,
        limit=limit,
        n_items=len(item_means),
        n_rows=len(rows),
        score=stats.mean(item_means) if item_means else 0.0,
        stderr=stats.standard_error(item_means),
        pass_scores=pass_scores,
        wall_s=round(wall_s, 3),
        extra={**extra, "concurrency": concurrency.record()},
    ).model_dump(mode="json")
    return TaskRun(rows=rows, results=results)


def write_task(run_dir: RunDir, server: str, task: str, run: TaskRun) -> None:
    """items.parquet first, results.json last: "complete" means both exist."""
    write_eval_items(run_dir.eval_items(server, task), run.rows)
    atomic_write_json(run_dir.eval_results(server, task), run.results)


def looks_for(plan: Plan, spec: EvalSpec, server: str, run_dir: RunDir, partner: Partner | None = None) -> Looks | None:
    """Look-sized chunks for this server's run of ``spec`` where it can stop early: the plan sets looks
    and a limit, the task runs through lm-eval, and every server this one is compared with has its
    items of the task in hand (the earlier server of a pair runs every item; the later one stops at
    the look where the gate on the paired items so far stops, for every pair it is in). ``partner``: a
    server evaluated at once or in turns with this one; where it is compared with this one and has not run the task,
    the two run in lockstep looks (``byog.evals.lockstep``), and a pair with any other server whose items
    are not in hand never stops."""
    if not stops_early(spec):
        return None
    assert spec.looks is not None and spec.limit is not None
    task = get_task(spec.task)
    pairs = pairs_judged_by(plan, spec, server)
    others = {b if c == server else c for c, b in pairs}
    complete = {o for o in others if run_dir.eval_complete(o, task.name)}
    lockstep = None
    if partner is not None and partner.server in others:  # complete or not: this side's looks on disk count
        lockstep = Lockstep(run_dir, task.name, server, partner)
    elif not pairs or complete != others:
        return None
    scored = {o: (item_scores(run_dir, o, task.name), passes_of(run_dir, o, task.name)) for o in complete}

    def stop(rows: list[dict[str, Any]]) -> bool:
        mine = scores_of((r["item_id"], r["item_sha256"], r["score"]) for r in rows)
        passes = len({r["pass_index"] for r in rows})
        for c, b in pairs:
            other = b if c == server else c
            if lockstep is not None and other == lockstep.partner.server:
                theirs, their_passes = lockstep.partner_scores()
            elif other in scored:
                theirs, their_passes = scored[other]
            else:
                return False  # a server not run yet: this pair cannot stop
            cand, base = (mine, theirs) if c == server else (theirs, mine)
            record = sequential_for(plan, task.name, c, b, cand, base, min(passes, their_passes))
            if record is None or record.decision == "inconclusive":
                return False
        return True

    design = group_sequential.SequentialDesign.of(spec)
    return Looks(sizes=group_sequential.look_sizes(spec.limit, design.fractions), stop=stop, lockstep=lockstep)


def _check_planned_items(spec: EvalSpec, server: str, run: TaskRun) -> None:
    """An eval with looks must reach its limit unless the gate stopped it: its looks are fractions of
    the limit, and records that end short of a look the gate needed would not verify."""
    seq = run.results["extra"].get("sequential")
    if spec.looks is None or spec.limit is None or (seq and seq["stopped"]):
        return
    if run.results["n_items"] < spec.limit:
        raise UsageError(
            f"{spec.task} ran {run.results['n_items']} items on {server}, fewer than the plan's limit {spec.limit} "
            "that its looks are fractions of: set the limit to the items the task has"
        )


def run_evals_for_server(
    plan: Plan,
    server_name: str,
    endpoint: Endpoint,
    run_dir: RunDir,
    data_dir: Path | None,
    reporter: Reporter,
    partner: Partner | None = None,
) -> None:
    """Every EvalSpec of the plan that names this server, skipping tasks already complete; none runs
    where one of them cannot fit the server's context (``partner``: the server evaluated at once or in
    turns with this one, ``looks_for``; in turns, ``TurnOver`` ends this side's turn at a look its
    partner has not run, with the task's looks so far on disk)."""
    check_evals_fit(plan, server_name, endpoint, run_dir)
    data_dir = resolve_data_dir(data_dir)
    for spec in plan.evals:
        if server_name not in plan.servers_for(spec):
            continue
        task = get_task(spec.task)
        if run_dir.eval_complete(server_name, task.name):
            reporter.line(f"eval {task.name} on {server_name}: already complete, skipped")
            continue
        run = run_task(
            task,
            server_name,
            endpoint,
            seeds=list(plan.seeds[: spec.passes]),
            limit=spec.limit,
            data_dir=data_dir,
            num_concurrent=spec.num_concurrent,
            server_info=recorded_server_info(run_dir, server_name),
            gen_overrides=spec.gen_kwargs,
            reporter=reporter,
            looks=looks_for(plan, spec, server_name, run_dir, partner),
            operating_points=spec.operating_points,
        )
        _check_planned_items(spec, server_name, run)
        write_task(run_dir, server_name, task.name, run)
        r = run.results
        reporter.line(
            f"eval {task.name} on {server_name}: {r['score']:.1f} points over {r['n_items']} items x "
            f"{len(r['sampling']['seeds'])} passes ({r['wall_s']:.0f} s at {concurrency_said(r['extra'])}, "
            f"data: {r['data']['label']}){looks_said(r['extra'].get('sequential'))}"
        )


def concurrency_said(extra: Mapping[str, Any]) -> str:
    """Where the eval line says the requests in flight: one concurrency, or each operating point's items."""
    strata = extra.get("strata")
    if strata:
        items = "/".join(str(n) for n in strata["items"].values())
        said = f"operating points {'/'.join(map(str, strata['points']))} in flight ({items} items"
        per_step = [(b or {}).get("tokens_per_step") for b in strata["server_batch"].values()]
        if per_step and all(isinstance(x, float) for x in per_step):
            said += "; server: " + "/".join(f"{x:.1f}" for x in per_step) + " output tokens per engine step"
        return said + ")"
    c = extra["concurrency"]
    return f"concurrency {c['num_concurrent']} ({c['source']})"


def looks_said(record: Mapping[str, Any] | None) -> str:
    """The eval line's tail for a run in looks: where it stopped, items run / planned."""
    if not record:
        return ""
    where = f"stopped at look {record['looks_run']}" if record["stopped"] else "no look stopped"
    if record.get("lockstep_with"):
        how = "in turns on one GPU" if record.get("in_turns") else "evaluated at once"
        where += f" (in the same looks as {record['lockstep_with']}, {how})"
    said = f"; {where}: items run / planned {record['items_run']} / {record['planned_items']}"
    return said + (f" ({record['why']})" if record.get("lockstep_with") and record.get("why") else "")
