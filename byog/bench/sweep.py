"""Run every bench point of one server into a run directory, resumably.

Per point: build its prompts, (optionally) reset the prefix cache, snapshot ``/metrics``, run the
workload (snapshotting again after a batch point's warm-up waves, NVML sampled throughout),
snapshot again, then write the raw rows and, last, the point record, each atomically.
A point whose two files exist is complete and skipped on a rerun. If the server dies mid-point
the point gets a ``failed`` record with the log tail and no rows (so a rerun retries it), the
server is restarted once, and the sweep goes on.

A batch point with a CI target stops measuring waves when its rule says so
(``byog.analysis.wave_stopping``; its record keeps the rule and every half-width). A point invalid
for transient causes only (``byog.analysis.validity.transient``) is measured again, at most plan
``remeasure`` times, once they have cleared (``byog.bench.settle``); each earlier attempt's files
move to ``bench/<server>/attempts/`` and the final record lists them. A re-measure resets the prefix
cache first (its record says so): it sends the prompts of the attempt before it, which the cache
would serve; a server that refuses the reset keeps its invalid point, not measured again.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import httpx

from byog import __version__
from byog.analysis import counters
from byog.analysis.bench_summary import search_probes
from byog.analysis.goodput import next_rate, rule_of
from byog.analysis.server_log import root_cause
from byog.analysis.validity import invalid_reasons, transient
from byog.analysis.wave_stopping import LiveStopping, Rule
from byog.bench.agentic import run_agentic_point, scripts_for
from byog.bench.nvml_sampler import PowerSampler, unavailable
from byog.bench.prompts import Prompt, ServerTokenizer, build_prompts, prompts_label, sends_text, vocabulary
from byog.bench.server_api import get_text, reset_prefix_cache
from byog.bench.settle import wait_until_clear
from byog.bench.traces import replay_requests, run_trace_point
from byog.bench.workloads import AfterWave, PointRun, client_load, run_point
from byog.core.errors import ByogError
from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter, ProgressBoard, ProgressTask, Reporter
from byog.plans.expand import agentic_context, points_for_server, probe_point, search_workloads
from byog.schemas.bench import Attempt, BenchPoint, PointRecord, PowerTrace, WaveStopping, write_request_rows
from byog.schemas.phases import Instant, now
from byog.schemas.plan import (
    Plan,
    RateWorkload,
    ServerConfig,
    SyntheticSessions,
    TraceSource,
)
from byog.schemas.server import Endpoint, RunningServer

MAX_RESTARTS = 1
LOG_TAIL_LINES = 40

# How far back in the server log byog looks for vLLM's own reason when the server dies.
REASON_TAIL_LINES = 400


class PointDone(TypedDict):
    """One point measured and written: how long requests were in flight, and why it is invalid (if it is)."""

    point_id: str
    measuring_s: float
    invalid_reasons: list[str]
    started_at: str
    requests: int  # sent, warm-up included (a batch point that stopped on its CI: fewer than planned)
    warmup: tuple[Instant, Instant] | None  # a batch point's warm-up waves: from the first request to the measured ones


class SweepOutcome(TypedDict):
    """One server's sweep: which points ran, were skipped (complete already) or failed, and the time spent."""

    server: str
    points: int
    run: list[str]
    skipped: list[str]
    failed: list[str]
    invalid: dict[str, list[str]]  # point id -> why it is invalid
    remeasured: dict[str, int]  # point id -> times measured again after a transient cause
    restarts: int
    aborted: str | None  # why the sweep stopped early
    measuring_s: float  # with requests in flight
    server_up_s: float
    measuring_share: float | None  # measuring_s / server_up_s
    warmups: list[tuple[Instant, Instant]]  # each batch point's warm-up waves (start, end)


class ServerDied(Exception):
    """The server stopped serving during a point. ``served`` is False when it served nothing since
    it (re)started: not one request of the point succeeded and its /metrics showed no generated
    token before the point; ``reason`` is vLLM's own error line from its log, where it left one."""

    def __init__(self, message: str, *, served: bool = True, reason: str | None = None) -> None:
        super().__init__(message)
        self.served = served
        self.reason = reason


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _healthy(server: RunningServer, requests_failed: bool) -> bool:
    """Alive, and (when requests failed) still answering /health: an engine that died under a live API server is dead
    too."""
    if not server.alive():
        return False
    if not requests_failed:
        return True

    try:
        return httpx.get(f"{server.endpoint.base_url}/health", timeout=10.0).status_code == 200
    except httpx.HTTPError:
        return False


def snapshot_metrics(run_dir: RunDir, server_name: str, point_id: str, when: str, base_url: str) -> str | None:
    text = get_text(f"{base_url}/metrics")
    if text is not None:
        atomic_write_text(run_dir.metrics_snapshot(server_name, point_id, when), text)
    return text


def power_unknown_reason(config: ServerConfig) -> str | None:
    """Why this machine's NVML would not measure the server's GPUs, or None when it would: an
    endpoint on another host runs on GPUs byog cannot see."""
    return config.elsewhere()


def gpu_indices(config: ServerConfig) -> list[int] | None:
    """The GPUs a server runs on, for the NVML sampler: docker ``gpus: [ids]``, else the ids in its
    env's ``CUDA_VISIBLE_DEVICES``; None (every GPU NVML sees) when neither names them."""
    return config.gpu_indices()


Run = Callable[[Any, Callable[[], None] | None, AfterWave | None], PointRun]


def point_prompts(
    point: BenchPoint, tok: ServerTokenizer, tokenizer_path: str | None, data_dir: Path | None
) -> list[Prompt]:
    """The prompts a batch, concurrency or rate point sends, in request order (the same for every server)."""
    return build_prompts(
        kind=point.prompts.kind,
        dataset=getattr(point.prompts, "dataset", None),
        api=point.api,
        isl=point.isl,
        count=point.total_requests,
        seed=point.prompt_seed,
        point_id=point.point_id,
        server=tok,
        tokenizer_path=tokenizer_path,
        data_dir=data_dir,
        repeat=bool(getattr(point.prompts, "repeat", False)),
        as_text=sends_text(point.prompts),
    )


def _prepare(
    point: BenchPoint, endpoint: Endpoint, tokenizer: str | None, data_dir: Path | None, total: Callable[[int], None]
) -> Run:
    """Build what the point sends (prompts, session scripts or trace requests) before any timing starts; an
    agentic point's ``max_context`` is resolved already (``agentic_context``)."""
    tok = ServerTokenizer(endpoint.base_url, endpoint.model)
    try:
        if point.kind == "agentic":
            vocab, specials = vocabulary(tokenizer or endpoint.tokenizer, tok)
            if isinstance(point.source, SyntheticSessions):
                prefix, scripts = scripts_for(point, point.source, vocab, specials)
                total(sum(s.n_turns for s in scripts))
                return lambda progress, _start, _after: run_agentic_point(
                    endpoint.base_url, endpoint.model, point, prefix, scripts, progress
                )
            assert isinstance(point.source, TraceSource) and point.speedup is not None
            requests, _ = replay_requests(
                point.source, point.speedup, point.prompt_seed, point.max_context, vocab, specials, key=point.point_id
            )
            total(len(requests))
            return lambda progress, _start, _after: run_trace_point(
                endpoint.base_url, endpoint.model, point, requests, progress
            )
        prompts = point_prompts(point, tok, tokenizer or endpoint.tokenizer, data_dir)
        return lambda progress, on_start, after_wave: run_point(
            endpoint.base_url,
            endpoint.model,
            point,
            prompts,
            progress,
            on_measure_start=on_start,
            after_wave=after_wave,
        )
    finally:
        tok.close()


def _record_base(point: BenchPoint, server_name: str, attempts: Sequence[Attempt] = ()) -> dict[str, Any]:
    """The fields a point's record has whether it completes or fails."""
    repeat = bool(getattr(point.prompts, "repeat", False))
    label = prompts_label(
        point.prompts.kind, getattr(point.prompts, "dataset", None), repeat, sends_text(point.prompts)
    )
    return dict(
        server=server_name,
        point=point,
        prompts_label=label,
        started_at=utc_now(),
        attempts=list(attempts),
        byog_version=__version__,
    )


def _write_failed(
    run_dir: RunDir,
    server: RunningServer,
    base: dict[str, Any],
    wall0: float,
    error: str,
    t_start_ns: int = 0,
    t_end_ns: int = 0,
) -> None:
    record = PointRecord(
        **base,
        status="failed",
        error=error,
        log_tail=server.log_tail(LOG_TAIL_LINES),
        duration_s=time.perf_counter() - wall0,
        t_start_ns=t_start_ns,
        t_end_ns=t_end_ns,
    )
    point: BenchPoint = base["point"]
    atomic_write_json(run_dir.bench_point(base["server"], point.point_id), record.model_dump(mode="json"))


def _raise_if_died(
    run_dir: RunDir, server: RunningServer, base: dict[str, Any], wall0: float, run: PointRun, before: str | None
) -> None:
    """Write a failed record and raise ``ServerDied`` when the server did not survive the point."""
    if _healthy(server, any(r.error for r in run.records)):
        return
    reason = root_cause(server.log_tail(REASON_TAIL_LINES))
    # Served since it started: a request of this point succeeded, or its counters (reset by a
    # restart) had generated tokens before the point began, in this sweep or an earlier one.
    # A /metrics that did not answer before the point (a loaded box, a dying node) is no evidence
    # that it never served: it gets its restart.
    served = (
        any(r.error is None for r in run.records)
        or before is None
        or bool(counters.counter_totals(before).get(counters.GENERATION_TOKENS))
    )
    suffix = f": {reason}" if reason else ""
    _write_failed(
        run_dir, server, base, wall0, "the server died during the point" + suffix, run.t_start_ns, run.t_end_ns
    )
    point: BenchPoint = base["point"]
    raise ServerDied(f"server '{base['server']}' died during {point.point_id}" + suffix, served=served, reason=reason)


def _complete_record(
    base: dict[str, Any],
    wall0: float,
    run: PointRun,
    before: str | None,
    measured: list[str | None],
    after: str | None,
    power: PowerTrace,
    reset: bool | None,
    stopping: WaveStopping | None = None,
) -> PointRecord:
    return PointRecord(
        **base,
        status="complete",
        duration_s=time.perf_counter() - wall0,
        t_start_ns=run.t_start_ns,
        t_end_ns=run.t_end_ns,
        client=client_load(run.cpu_share, run.loop_lag_p99_s, run.loop_lag_max_s),
        counter_deltas=counters.counter_deltas(before, after),
        measured_counter_deltas=counters.counter_deltas(measured[0], after)
        if measured and measured[0] is not None
        else None,
        power=power,
        prefix_cache_reset=reset,
        stopping=stopping,
    )


def run_one_point(
    point: BenchPoint,
    server_name: str,
    server: RunningServer,
    run_dir: RunDir,
    *,
    tokenizer: str | None = None,
    data_dir: Path | None = None,
    progress: Callable[[int], None] = lambda _: None,
    total: Callable[[int], None] = lambda _: None,
    gpus: list[int] | None = None,
    power_reason: str | None = None,
    attempts: Sequence[Attempt] = (),
) -> PointDone:
    """Measure one point and write its files. Raises ``ServerDied`` (after writing a failed record).

    Around the requests: /metrics before, after the warm-up waves (batch) and after; NVML samples
    (power, energy, clocks, throttle reasons) of ``gpus`` throughout, unless ``power_reason``
    says why they would not be the server's. The record holds the point as it ran: an agentic
    point's ``max_context`` resolved from the server when the plan left it open; refused
    (``AgenticContextUnknown``, before any request) when neither states it.
    """
    endpoint = server.endpoint
    if point.kind == "agentic":
        point = point.model_copy(update={"max_context": agentic_context(point, server_name, endpoint.max_model_len)})
    base = _record_base(point, server_name, attempts)
    wall0 = time.perf_counter()
    try:
        measure = _prepare(point, endpoint, tokenizer, data_dir, total)
    except ByogError as err:
        if not server.alive():
            _write_failed(run_dir, server, base, wall0, f"the server died while byog built prompts: {err}")
            raise ServerDied(str(err)) from None
        raise
    # A re-measure (``attempts``) starts from an empty prefix cache: it sends the prompts its first
    # attempt sent, which the cache would otherwise serve (shorter prefills, inflated hit rates).
    reset = reset_prefix_cache(endpoint.base_url) if point.reset_prefix_cache or attempts else None
    before = snapshot_metrics(run_dir, server_name, point.point_id, "before", endpoint.base_url)
    measured: list[str | None] = []
    warmed: list[Instant] = []

    def measure_start() -> None:
        warmed.append(now())
        measured.append(snapshot_metrics(run_dir, server_name, point.point_id, "measured", endpoint.base_url))

    rule = Rule.of(point)
    stopping = LiveStopping(point, server_name, rule) if rule is not None else None
    sampler = PowerSampler(gpus).start() if power_reason is None else None
    first = now()
    try:
        run = measure(
            progress,
            measure_start if point.kind == "batch" else None,
            stopping.after_wave if stopping is not None else None,
        )
    finally:
        power = sampler.stop() if sampler is not None else unavailable(power_reason or "")
    _raise_if_died(run_dir, server, base, wall0, run, before)
    after = snapshot_metrics(run_dir, server_name, point.point_id, "after", endpoint.base_url)
    write_request_rows(run_dir.bench_rows(server_name, point.point_id), run.records)
    record = _complete_record(
        base, wall0, run, before, measured, after, power, reset, stopping.record() if stopping else None
    )
    atomic_write_json(run_dir.bench_point(server_name, point.point_id), record.model_dump(mode="json"))
    return {
        "point_id": point.point_id,
        "measuring_s": (run.t_end_ns - run.t_start_ns) / 1e9,
        "invalid_reasons": invalid_reasons(record, run.records),
        "started_at": record.started_at,
        "requests": len(run.records),
        "warmup": (first, warmed[0]) if warmed and point.warmup_waves else None,
    }


def _empty_outcome(server_name: str, points: int) -> SweepOutcome:
    return {
        "server": server_name,
        "points": points,
        "run": [],
        "skipped": [],
        "failed": [],
        "invalid": {},
        "remeasured": {},
        "restarts": 0,
        "aborted": None,
        "measuring_s": 0.0,
        "server_up_s": 0.0,  # both set once the sweep ends
        "measuring_share": None,
        "warmups": [],
    }


@dataclass
class _ServerSweep:
    """What measuring one point of a server's sweep needs; ``result`` collects the outcome."""

    plan: Plan
    server_name: str
    server: RunningServer
    run_dir: RunDir
    reporter: Reporter
    progress: ProgressBoard
    result: SweepOutcome
    tokenizer: str | None = None
    data_dir: Path | None = None

    def measure(self, point: BenchPoint) -> None:
        """Measure ``point`` unless it is complete already or the sweep has been aborted."""
        if self.run_dir.bench_point_complete(self.server_name, point.point_id):
            self.result["skipped"].append(point.point_id)
            return
        if self.result["aborted"]:
            return
        task = self.progress.task(
            f"{self.server_name} {point.point_id} ({point.load_label})", total=point.total_requests or None
        )
        attempts: list[Attempt] = []
        while True:
            try:
                done = self._run_point(point, task, attempts)
            except ServerDied as err:
                self.result["failed"].append(point.point_id)
                task.update(description=f"{self.server_name} {point.point_id}: server died", style="error")
                self._after_server_died(point, err)
                return
            if not transient(done["invalid_reasons"]) or len(attempts) >= self.plan.remeasure:
                break
            if not reset_prefix_cache(self.server.endpoint.base_url):
                self.reporter.line(
                    f"{self.server_name} {point.point_id}: invalid ({done['invalid_reasons'][0]}); not measured "
                    "again: the server refused /reset_prefix_cache, and without it a second attempt is served its "
                    "first attempt's prompts from the prefix cache",
                    style="warn",
                )
                break
            attempts.append(self._set_aside(point, done, len(attempts) + 1))
            task = self.progress.task(
                f"{self.server_name} {point.point_id} ({point.load_label}, attempt {len(attempts) + 1})",
                total=point.total_requests or None,
            )
        if attempts:
            self.result["remeasured"][point.point_id] = len(attempts)
        self._record(point, task, done)

    def _set_aside(self, point: BenchPoint, done: PointDone, attempt: int) -> Attempt:
        """Wait for the transient cause of an invalid attempt to clear, then move its files aside
        (``RunDir.bench_attempt``) so the point is measured again."""
        reasons = done["invalid_reasons"]
        self.reporter.line(
            f"{self.server_name} {point.point_id}: invalid ({reasons[0]}); measuring it again once that clears",
            style="warn",
        )
        settled = wait_until_clear(reasons, gpu_indices(self.plan.servers[self.server_name]))
        record, rows = self.run_dir.bench_attempt(self.server_name, point.point_id, attempt)
        record.parent.mkdir(parents=True, exist_ok=True)
        self.run_dir.bench_rows(self.server_name, point.point_id).replace(rows)
        self.run_dir.bench_point(self.server_name, point.point_id).replace(record)
        return Attempt(
            attempt=attempt,
            started_at=done["started_at"],
            invalid_reasons=reasons,
            waited_s=round(settled.waited_s, 3),
            cleared=settled.cleared,
        )

    def _run_point(self, point: BenchPoint, task: ProgressTask, attempts: Sequence[Attempt] = ()) -> PointDone:
        config = self.plan.servers[self.server_name]
        return run_one_point(
            point,
            self.server_name,
            self.server,
            self.run_dir,
            tokenizer=self.tokenizer,
            data_dir=self.data_dir,
            progress=task.advance,
            total=lambda n: task.update(total=n),
            gpus=gpu_indices(config),
            power_reason=power_unknown_reason(config),
            attempts=attempts,
        )

    def _after_server_died(self, point: BenchPoint, err: ServerDied) -> None:
        """Restart the server once, or abort its sweep when it cannot serve or already was restarted."""
        if not err.served:
            # It died on its first requests since it started, and none succeeded: a server
            # that cannot serve this configuration (vLLM says why). A restart would only
            # repeat it, so its remaining points are not run.
            self.result["aborted"] = f"{err}; it served no request since it started, so its other points are not run"
            self.reporter.line(f"server '{self.server_name}' cannot serve: {err.reason or err}", style="error")
            return
        if self.result["restarts"] >= MAX_RESTARTS:
            self.result["aborted"] = f"{err}; it had already been restarted once"
            return
        self.result["restarts"] += 1
        self.reporter.line(
            f"server '{self.server_name}' died during {point.point_id}; restarting it once", style="warn"
        )
        try:
            self.server.restart()
        except ByogError as restart_err:
            self.result["aborted"] = f"restart failed: {restart_err}"

    def _record(self, point: BenchPoint, task: ProgressTask, done: PointDone) -> None:
        if point.total_requests and done["requests"] < point.total_requests:
            task.update(total=done["requests"])  # it stopped on its CI before its cap: the bar ends full
        self.result["run"].append(point.point_id)
        self.result["measuring_s"] += done["measuring_s"]
        if done["warmup"] is not None:
            self.result["warmups"].append(done["warmup"])
        if done["invalid_reasons"]:
            self.result["invalid"][point.point_id] = done["invalid_reasons"]
            task.update(description=f"{self.server_name} {point.point_id}: invalid", style="warn")

    def search_rates(self) -> None:
        """Rate searches: each probe's rate follows from the probes already measured (on disk, so a
        rerun resumes the search where it stopped)."""
        for workload in search_workloads(self.plan):
            if self.server_name not in self.plan.servers_for(workload):
                continue
            if not self.plan.measured_on(workload.name or workload.kind, self.server_name, self.run_dir.launch):
                continue
            for isl in workload.isl:
                for osl in workload.osl:
                    self._search_one(workload, isl, osl)

    def _search_one(self, workload: RateWorkload, isl: int, osl: int) -> None:
        assert workload.search is not None and workload.slo is not None
        rule = rule_of(workload.search, workload.slo)
        name = workload.name or workload.kind
        while not self.result["aborted"]:
            probes = [
                (p.rate, p.slo_share or 0.0) for p in search_probes(self.run_dir, self.server_name, name, isl, osl)
            ]
            rate = next_rate(probes, rule)
            if rate is None:
                return
            point = probe_point(self.plan, workload, rate, isl, osl)
            self.measure(point)
            if not self.run_dir.bench_point_complete(self.server_name, point.point_id):
                return  # a probe the server died in is retried by a rerun, not in a loop here


def check_agentic_contexts(points: Iterable[BenchPoint], server_name: str, endpoint: Endpoint, run_dir: RunDir) -> None:
    """Refuse, before the server's first point, an agentic point of ``points`` (the server's) not yet complete
    that neither the plan nor the server sizes (``agentic_context``), as an eval that cannot run is refused:
    the plan must change, so a rerun would only meet it again, and saying it now spends none of the server's
    time on the points before it."""
    for point in points:
        if point.kind == "agentic" and not run_dir.bench_point_complete(server_name, point.point_id):
            agentic_context(point, server_name, endpoint.max_model_len)


def run_bench_for_server(
    plan: Plan,
    server_name: str,
    server: RunningServer,
    run_dir: RunDir,
    reporter: Reporter = NullReporter(),
    *,
    tokenizer: str | None = None,
    data_dir: Path | None = None,
) -> SweepOutcome:
    """Run every point of ``server_name`` not yet complete in ``run_dir``; returns timing and outcome.

    ``measuring_s / server_up_s`` is the share of the server's up time (since this call) spent
    with requests in flight; the rest is prompt building, /metrics snapshots, file writes and restarts.
    """

    points = points_for_server(plan, server_name, run_dir.launch)
    check_agentic_contexts(points, server_name, server.endpoint, run_dir)
    t0 = time.perf_counter()
    result = _empty_outcome(server_name, len(points))
    with reporter.progress() as progress:
        sweep = _ServerSweep(
            plan, server_name, server, run_dir, reporter, progress, result, tokenizer=tokenizer, data_dir=data_dir
        )
        for point in points:
            sweep.measure(point)
        sweep.search_rates()
    result["server_up_s"] = time.perf_counter() - t0
    result["measuring_share"] = result["measuring_s"] / result["server_up_s"] if result["server_up_s"] > 0 else None
    return result
