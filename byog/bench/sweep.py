"""Run every bench point of one server into a run directory, resumably.

Per point: build its prompts, (optionally) reset the prefix cache, snapshot ``/metrics``, run the
workload, snapshot again, then write the raw rows and, last, the point record, each atomically.
A point whose two files exist is complete and skipped on a rerun. If the server dies mid-point
the point gets a ``failed`` record with the log tail and no rows (so a rerun retries it), the
server is restarted once, and the sweep goes on.
"""

from __future__ import annotations

import datetime as _dt
import time
from pathlib import Path
from typing import Any

from byog import __version__
from byog.bench import server_metrics as sm
from byog.bench.prompts import ServerTokenizer, build_prompts, prompts_label
from byog.bench.rows import write_rows
from byog.bench.validity import invalid_reasons
from byog.bench.workloads import CPU_SHARE_LIMIT, LOOP_LAG_FLOOR_S, LOOP_LAG_SHARE_OF_ITL, run_point
from byog.bundles.rundir import RunDir
from byog.errors import ByogError
from byog.images.runtime import RunningServer
from byog.ioutil import atomic_write_json, atomic_write_text
from byog.plans.expand import BenchPoint, points_for_server
from byog.plans.model import Plan
from byog.schemas.bench import ClientLoad, PointRecord

MAX_RESTARTS = 1
LOG_TAIL_LINES = 40


class ServerDied(Exception):
    pass


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _get_text(url: str, timeout_s: float = 30.0) -> str | None:
    import httpx

    try:
        response = httpx.get(url, timeout=timeout_s)
        return response.text if response.status_code == 200 else None
    except httpx.HTTPError:
        return None


def _reset_prefix_cache(base_url: str) -> bool:
    """vLLM serves POST /reset_prefix_cache only in dev mode (VLLM_SERVER_DEV_MODE=1); False = refused."""
    import httpx

    try:
        return httpx.post(f"{base_url}/reset_prefix_cache", timeout=60.0).status_code == 200
    except httpx.HTTPError:
        return False


def _healthy(server: RunningServer, requests_failed: bool) -> bool:
    """Alive, and (when requests failed) still answering /health: an engine that died under a live API server is dead too."""
    if not server.alive():
        return False
    if not requests_failed:
        return True
    import httpx

    try:
        return httpx.get(f"{server.endpoint.base_url}/health", timeout=10.0).status_code == 200
    except httpx.HTTPError:
        return False


def _snapshot(run_dir: RunDir, server_name: str, point_id: str, when: str, base_url: str) -> str | None:
    text = _get_text(f"{base_url}/metrics")
    if text is not None:
        atomic_write_text(run_dir.metrics_snapshot(server_name, point_id, when), text)
    return text


def run_one_point(point: BenchPoint, server_name: str, server: RunningServer, run_dir: RunDir, *,
                  tokenizer: str | None = None, data_dir: Path | None = None,
                  progress: Any = lambda n: None) -> dict[str, Any]:
    """Measure one point and write its files. Raises ``ServerDied`` (after writing a failed record)."""
    endpoint = server.endpoint
    started_at, wall0 = _utc_now(), time.perf_counter()
    label = prompts_label(point.prompts.kind, getattr(point.prompts, "dataset", None))
    base: dict[str, Any] = dict(server=server_name, point=point, prompts_label=label, started_at=started_at,
                                byog_version=__version__)

    def fail(error: str, t_start_ns: int = 0, t_end_ns: int = 0) -> None:
        record = PointRecord(**base, status="failed", error=error, log_tail=server.log_tail(LOG_TAIL_LINES),
                             duration_s=time.perf_counter() - wall0, t_start_ns=t_start_ns, t_end_ns=t_end_ns)
        atomic_write_json(run_dir.bench_point(server_name, point.point_id), record.model_dump(mode="json"))

    try:
        tok = ServerTokenizer(endpoint.base_url, endpoint.model)
        try:
            prompts = build_prompts(kind=point.prompts.kind, dataset=getattr(point.prompts, "dataset", None),
                                    api=point.api, isl=point.isl, count=point.total_requests, seed=point.prompt_seed,
                                    point_id=point.point_id, server=tok, tokenizer_path=tokenizer or endpoint.tokenizer,
                                    data_dir=data_dir)
        finally:
            tok.close()
    except ByogError as err:
        if not server.alive():
            fail(f"the server died while byog built prompts: {err}")
            raise ServerDied(str(err)) from None
        raise
    reset = _reset_prefix_cache(endpoint.base_url) if point.reset_prefix_cache else None
    before = _snapshot(run_dir, server_name, point.point_id, "before", endpoint.base_url)
    run = run_point(endpoint.base_url, endpoint.model, point, prompts, progress)
    if not _healthy(server, any(r.error for r in run.records)):
        fail("the server died during the point", run.t_start_ns, run.t_end_ns)
        raise ServerDied(f"server '{server_name}' died during {point.point_id}")
    after = _snapshot(run_dir, server_name, point.point_id, "after", endpoint.base_url)
    write_rows(run_dir.bench_rows(server_name, point.point_id), run.records)
    record = PointRecord(
        **base, status="complete", duration_s=time.perf_counter() - wall0,
        t_start_ns=run.t_start_ns, t_end_ns=run.t_end_ns,
        client=ClientLoad(cpu_share=run.cpu_share, loop_lag_p99_s=run.loop_lag_p99_s, loop_lag_max_s=run.loop_lag_max_s,
                          cpu_share_limit=CPU_SHARE_LIMIT, loop_lag_share_of_itl=LOOP_LAG_SHARE_OF_ITL,
                          loop_lag_floor_s=LOOP_LAG_FLOOR_S),
        counter_deltas=sm.counter_deltas(before, after),
        prefix_cache_reset=reset,
    )
    data = record.model_dump(mode="json")
    atomic_write_json(run_dir.bench_point(server_name, point.point_id), data)
    return {"point_id": point.point_id, "measuring_s": (run.t_end_ns - run.t_start_ns) / 1e9,
            "invalid_reasons": invalid_reasons(data, run.records)}


def run_bench_for_server(plan: Plan, server_name: str, server: RunningServer, run_dir: RunDir, console: Any,
                         *, tokenizer: str | None = None, data_dir: Path | None = None) -> dict[str, Any]:
    """Run every point of ``server_name`` not yet complete in ``run_dir``; returns timing and outcome.

    ``measuring_s / server_up_s`` is the share of the server's up time (since this call) spent
    with requests in flight; the rest is prompt building, /metrics snapshots, file writes and restarts.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    points = points_for_server(plan, server_name)
    t0 = time.perf_counter()
    result: dict[str, Any] = {"server": server_name, "points": len(points), "run": [], "skipped": [], "failed": [],
                              "invalid": {}, "restarts": 0, "aborted": None, "measuring_s": 0.0}
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        for point in points:
            if run_dir.bench_point_complete(server_name, point.point_id):
                result["skipped"].append(point.point_id)
                continue
            if result["aborted"]:
                continue
            task = progress.add_task(f"{server_name} {point.point_id} ({point.load_label})", total=point.total_requests)
            try:
                done = run_one_point(point, server_name, server, run_dir, tokenizer=tokenizer, data_dir=data_dir,
                                     progress=lambda n, _t=task: progress.advance(_t, n))
            except ServerDied as err:
                result["failed"].append(point.point_id)
                progress.update(task, description=f"[red]{server_name} {point.point_id}: server died")
                if result["restarts"] >= MAX_RESTARTS:
                    result["aborted"] = f"{err}; it had already been restarted once"
                    continue
                result["restarts"] += 1
                console.print(f"[yellow]server '{server_name}' died during {point.point_id}; restarting it once[/]")
                try:
                    server.restart()
                except ByogError as restart_err:
                    result["aborted"] = f"restart failed: {restart_err}"
                continue
            result["run"].append(point.point_id)
            result["measuring_s"] += done["measuring_s"]
            if done["invalid_reasons"]:
                result["invalid"][point.point_id] = done["invalid_reasons"]
                progress.update(task, description=f"[yellow]{server_name} {point.point_id}: invalid")
    result["server_up_s"] = time.perf_counter() - t0
    result["measuring_share"] = result["measuring_s"] / result["server_up_s"] if result["server_up_s"] > 0 else None
    return result
