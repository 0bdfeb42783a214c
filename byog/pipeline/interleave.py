"""An interleaved pair (``pairs: [{candidate, baseline, interleave: true}]``): both servers start once
with vLLM's sleep mode and stay up; only the one measuring holds the GPU.

Order: side A is the pair's baseline, side B its candidate. A starts, is put to sleep, B starts
(while A sleeps). Each batch point is then measured in ABBA blocks of one wave per visit
(``byog.analysis.interleave``): the first visit of a side adds the point's warm-up waves, and a
swap (sleep the one, wake the other) comes before every visit that follows the other side's. Each
side's rows of the point are written as one file, each row with its visit (``interleave_seq``) and
side, so the summary's bootstrap can resample blocks. Other points run whole, AB for even points and
BA for odd ones. Evals follow on the same servers in turns, in the same looks
(``byog.pipeline.eval_turns``: both stop where the paired gate does); then numerics passes, A's, one
swap, B's.

Refused before anything starts (``interleave_check.check_interleave``) where the local vLLM's platform has no sleep
mode or both sides' weights would not fit the host's memory; a server that answers 404 on
``/is_sleeping`` after it started (a runtime byog cannot probe beforehand) is refused then.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from byog import __version__
from byog.analysis import counters, wake
from byog.analysis.interleave import Side, side_of
from byog.bench.nvml_sampler import unavailable
from byog.bench.prompts import Prompt, ServerTokenizer, prompts_label, sends_text
from byog.bench.server_api import metrics_text, reset_prefix_cache
from byog.bench.sweep import check_agentic_contexts, point_prompts, run_one_point, snapshot_metrics, utc_now
from byog.bench.workloads import PointRun, client_load, run_point
from byog.core.errors import ByogError, UsageError
from byog.core.io import atomic_write_json, read_json
from byog.core.paths import SUPERSEDED, RunDir
from byog.core.reporter import Reporter
from byog.evals.runner import check_evals_fit
from byog.pipeline.activity import add_span, add_warmups, merge_into_server_record, phase, spent
from byog.pipeline.eval_turns import run_evals_in_turns
from byog.pipeline.launch import launch_server
from byog.pipeline.numerics import run_numerics_for_server
from byog.pipeline.wake_check import WakeCheck, WakeIntegrityFailure
from byog.plans.expand import expand_plan, points_for_server
from byog.runtimes import sleep_mode
from byog.schemas.bench import BenchPoint, PointRecord, RequestRow, write_request_rows
from byog.schemas.phases import now
from byog.schemas.plan import Plan
from byog.schemas.server import PreparedModel, RunningServer, SleepModeRecord


def interleaved_rounds(plan: Plan, rounds: list[tuple[int, str]]) -> list[tuple[int, str | tuple[str, str]]]:
    """The launch rounds with each interleaved pair as one item (candidate, baseline), where its first server was."""
    pair_of = {name: pair for pair in plan.interleaved_pairs for name in pair}
    out: list[tuple[int, str | tuple[str, str]]] = []
    for launch, name in rounds:
        pair = pair_of.get(name)
        if pair is None:
            out.append((launch, name))
        elif (launch, pair) not in out:
            out.append((launch, pair))
    return out


FALLBACK_ASIDE = "wake-integrity-"  # .superseded/<this><UTC>/: what a failed wake check moved aside


class Pair:
    """Two servers of one pair, up at once; ``on(side)`` swaps so that side holds the GPU."""

    def __init__(self, plan: Plan, names: dict[Side, str], rd: RunDir) -> None:
        self.plan, self.names, self.rd = plan, names, rd
        self.servers: dict[Side, RunningServer] = {}
        self.controls: dict[Side, sleep_mode.SleepControl] = {}
        self.checks: dict[Side, WakeCheck] = {}
        self.wake_warmup_waves = next(
            (p.wake_warmup_waves for p in plan.pairs or [] if {p.candidate, p.baseline} == set(names.values())), 0
        )
        self.records: dict[Side, dict[str, Any]] = {}
        self.awake: Side | None = None

    def start(self, side: Side, model: PreparedModel) -> None:
        name = self.names[side]
        with phase(self.rd, "start", name):
            server = launch_server(self.plan, name, model, self.rd, transform=sleep_mode.with_sleep_mode)
        self.servers[side] = server
        control = sleep_mode.SleepControl(name, server.endpoint.base_url)
        try:
            control.is_sleeping()
        except sleep_mode.SleepModeAbsent as err:
            raise UsageError(f"{err}; run the pair sequentially (interleave: false)") from None
        self.controls[side] = control
        other: Side = "B" if side == "A" else "A"
        self.records[side] = {
            "partner": self.names[other],
            "side": side,
            "level": sleep_mode.SLEEP_LEVEL,
            "swaps": [],
        }
        self.awake = side
        self.checks[side] = WakeCheck(
            self.plan, (name, self.names[other]), server.endpoint.base_url, server.endpoint.model
        )
        try:
            with spent(self.rd, name, "wake-check"):
                self.checks[side].before_first_sleep()
        finally:
            self._write(side)

    def put_to_sleep(self, side: Side) -> float:
        """Sleep ``side``; the first time, record what it holds asleep."""
        seconds = self.controls[side].sleep()
        record = self.records[side]
        if record.get("asleep_host_rss_bytes") is None:
            record["asleep_host_rss_bytes"] = sleep_mode.process_rss_bytes(getattr(self.servers[side], "pid", None))
            record["asleep_gpu_used_bytes"] = sleep_mode.gpu_used_bytes()
            self._write(side)
        if self.awake == side:
            self.awake = None
        return seconds

    def on(self, side: Side, seq: int, point_id: str | None, warmup_waves: int = 0) -> bool:
        """Make ``side`` the server on the GPU: sleep the other, wake this one (a swap), unless it is already;
        then its fingerprint (WakeIntegrityFailure when it changed). Whether a swap happened."""
        if self.awake == side:
            return False
        gpu_before = sleep_mode.gpu_used_bytes()
        t0 = now()
        other: Side = "B" if side == "A" else "A"
        sleep_s = self.put_to_sleep(other) if self.awake == other else 0.0
        gpu_asleep = sleep_mode.gpu_used_bytes()
        wake_s = self.controls[side].wake_up()
        t1 = now()
        self.awake = side
        record = self.records[side]
        if record.get("awake_gpu_used_bytes") is None:
            record["awake_gpu_used_bytes"] = sleep_mode.gpu_used_bytes()
        record["swaps"].append(
            {
                "seq": seq,
                "point_id": point_id,
                "from_server": self.names[other],
                "sleep_s": round(sleep_s, 4),
                "wake_s": round(wake_s, 4),
                "at_unix_s": round(t0[1], 3),
                "level": sleep_mode.SLEEP_LEVEL,
                "gpu_used_before_bytes": gpu_before,
                "gpu_used_asleep_bytes": gpu_asleep,
                "gpu_used_after_bytes": sleep_mode.gpu_used_bytes(),
                "warmup_waves": warmup_waves,
            }
        )
        add_span(self.rd, self.names[side], "swap", t0, t1)
        check = self.checks.get(side)  # every started side has one; a pair assembled by hand may not
        try:
            if check is not None:
                with spent(self.rd, self.names[side], "wake-check"):
                    check.after_wake(seq, point_id)
        finally:
            self._write(side)
        return True

    def _write(self, side: Side) -> None:
        check = self.checks.get(side)
        if check is not None:
            self.records[side]["fingerprints"] = [r.model_dump(mode="json") for r in check.records]
        merge_into_server_record(self.rd, self.names[side], {"sleep_mode": self.records[side]})

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()


def visits(point: BenchPoint) -> list[tuple[int, Side, int, int]]:
    """(seq, side, first wave, end wave) of each visit of a batch point: one measured wave per visit,
    a side's first visit also its warm-up waves."""
    out, next_wave = [], {"A": 0, "B": 0}
    for seq in range(2 * point.wave_cap):
        side = side_of(seq)
        first = next_wave[side]
        end = point.warmup_waves + 1 if first == 0 else first + 1
        out.append((seq, side, first, end))
        next_wave[side] = end
    return out


class _SideRun:
    """One side's visits of one point, merged into the point's one record and rows file."""

    def __init__(self, name: str, server: RunningServer, point: BenchPoint, prompts: list[Prompt]) -> None:
        self.name, self.server, self.point, self.prompts = name, server, point, prompts
        self.rows: list[RequestRow] = []
        self.runs: list[PointRun] = []
        self.before: str | None = None
        self.measured: str | None = None
        self.reset: bool | None = None
        # counter deltas per visit, so the fingerprints and warm-up waves between visits stay out of them
        self.windows: list[dict[str, Any]] = []
        self.measured_windows: list[dict[str, Any]] = []
        self.started_at = utc_now()
        self.duration_s = 0.0

    def wake_warmup(self, waves: int) -> None:
        """Waves after a wake, before the visit's measured one: the point's first prompts again (the sleep
        dropped the KV cache, so they warm nothing the measured wave reuses); their rows are not kept."""
        b = self.point.batch_size or 1
        prompts = [self.prompts[i % len(self.prompts)] for i in range(waves * b)]
        part = self.point.model_copy(update={"warmup_waves": waves, "waves": 0})
        t0 = time.perf_counter()
        run_point(self.server.endpoint.base_url, self.server.endpoint.model, part, prompts)
        self.duration_s += time.perf_counter() - t0

    def visit(self, rd: RunDir, seq: int, side: Side, first: int, end: int) -> None:
        point, b = self.point, self.point.batch_size or 1
        base_url = self.server.endpoint.base_url
        warmup = max(point.warmup_waves - first, 0)
        if first == 0:
            self.reset = reset_prefix_cache(base_url) if point.reset_prefix_cache else None
            self.before = snapshot_metrics(rd, self.name, point.point_id, "before", base_url)
        start = self.before if first == 0 else metrics_text(base_url)
        part = point.model_copy(update={"warmup_waves": warmup, "waves": end - first - warmup})

        def measure_start() -> None:
            self.measured = snapshot_metrics(rd, self.name, point.point_id, "measured", base_url)

        t0 = time.perf_counter()
        run = run_point(
            base_url,
            self.server.endpoint.model,
            part,
            self.prompts[first * b : end * b],
            on_measure_start=measure_start if first == 0 and warmup else None,
        )
        self.duration_s += time.perf_counter() - t0
        if first == 0 and not warmup:
            self.measured = self.before
        end_text = metrics_text(base_url)
        self.windows.append(counters.counter_deltas(start, end_text))
        self.measured_windows.append(counters.counter_deltas(self.measured if first == 0 else start, end_text))
        self.runs.append(run)
        for row in run.records:
            self.rows.append(
                row.model_copy(
                    update={
                        "wave": row.wave + first,
                        "request_index": row.request_index + first * b,
                        "interleave_seq": seq,
                        "interleave_side": side,
                    }
                )
            )
        failed = [r.error for r in run.records if r.error]
        if failed and not self.server.alive():
            raise ByogError(f"server '{self.name}' died during {point.point_id}: {failed[0]}")

    def write(self, rd: RunDir) -> None:
        point, base_url = self.point, self.server.endpoint.base_url
        snapshot_metrics(rd, self.name, point.point_id, "after", base_url)
        write_request_rows(rd.bench_rows(self.name, point.point_id), self.rows)
        shares = [r.cpu_share for r in self.runs if r.cpu_share is not None]
        lags = [r.loop_lag_p99_s for r in self.runs if r.loop_lag_p99_s is not None]
        lag_max = [r.loop_lag_max_s for r in self.runs if r.loop_lag_max_s is not None]
        record = PointRecord(
            server=self.name,
            point=point,
            prompts_label=prompts_label(
                point.prompts.kind,
                getattr(point.prompts, "dataset", None),
                bool(getattr(point.prompts, "repeat", False)),
                sends_text(point.prompts),
            ),
            status="complete",
            started_at=self.started_at,
            duration_s=self.duration_s,
            t_start_ns=self.runs[0].t_start_ns,
            t_end_ns=self.runs[-1].t_end_ns,
            client=client_load(
                max(shares) if shares else None, max(lags) if lags else None, max(lag_max) if lag_max else None
            ),
            counter_deltas=counters.sum_deltas(self.windows),
            measured_counter_deltas=counters.sum_deltas(self.measured_windows) if self.measured is not None else None,
            power=unavailable("interleaved pair: both servers share the GPUs, NVML samples are not per visit"),
            prefix_cache_reset=self.reset,
            byog_version=__version__,
        )
        atomic_write_json(rd.bench_point(self.name, point.point_id), record.model_dump(mode="json"))


def _batch_point(pair: Pair, point: BenchPoint, rd: RunDir, data_dir: Path | None) -> None:
    # ABBA visits pair the two sides' waves one for one: an interleaved batch point runs its fixed
    # ``waves``, without sequential stopping (each side stopping on its own CI would break the blocks).
    point = point.model_copy(update={"ci_target": None, "max_waves": 0, "waves": point.wave_cap})
    runs: dict[Side, _SideRun] = {}
    for side in ("A", "B"):
        server = pair.servers[side]
        tok = ServerTokenizer(server.endpoint.base_url, server.endpoint.model)
        try:
            prompts = point_prompts(point, tok, server.endpoint.tokenizer, data_dir)
        finally:
            tok.close()
        runs[side] = _SideRun(pair.names[side], server, point, prompts)
    for seq, side, first, end in visits(point):
        warmup = pair.wake_warmup_waves if first > 0 else 0  # a first visit has the point's own warm-up
        swapped = pair.on(side, seq, point.point_id, warmup)
        with spent(rd, pair.names[side], "measure"):
            if swapped and warmup:
                runs[side].wake_warmup(warmup)
            runs[side].visit(rd, seq, side, first, end)
    for run in runs.values():
        run.write(rd)


def _whole_point(
    pair: Pair, point: BenchPoint, index: int, sides: list[Side], rd: RunDir, data_dir: Path | None
) -> None:
    order = sides if index % 2 == 0 else list(reversed(sides))
    for pos, side in enumerate(order):
        name = pair.names[side]
        if rd.bench_point_complete(name, point.point_id):
            continue
        pair.on(side, 2 * index + pos, point.point_id)
        with spent(rd, name, "measure"):
            done = run_one_point(point, name, pair.servers[side], rd, data_dir=data_dir)
            add_warmups(rd, name, [done["warmup"]] if done["warmup"] else [])


def bench_pair(pair: Pair, rd: RunDir, data_dir: Path | None, reporter: Reporter) -> None:
    for index, point in enumerate(expand_plan(pair.plan)):
        sides: list[Side] = [s for s in ("A", "B") if pair.names[s] in point.servers]
        if not sides:
            continue
        done = all(rd.bench_point_complete(pair.names[s], point.point_id) for s in sides)
        if done:
            continue
        reporter.line(f"interleaved {point.point_id} ({point.load_label}): {' / '.join(sides)}")
        if point.kind == "batch" and len(sides) == 2:
            _batch_point(pair, point, rd, data_dir)
        else:
            _whole_point(pair, point, index, sides, rd, data_dir)


def _fall_back(pair: Pair, rd: RunDir, why: str) -> dict[str, dict[str, Any]]:
    """After a wake failed its check: move aside every point with a visit measured since the side's last good
    fingerprint, and record the pair's points left to measure as measured sequentially."""
    invalid = {
        point_id
        for side in pair.records
        for point_id, _ in wake.invalid_points(SleepModeRecord.model_validate(pair.records[side]))
    }
    aside = rd.root / SUPERSEDED / f"{FALLBACK_ASIDE}{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    for point_id in sorted(invalid):
        for name in pair.names.values():
            for path in (rd.bench_rows(name, point_id), rd.bench_point(name, point_id)):
                if path.is_file():
                    target = aside / path.relative_to(rd.root)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    path.rename(target)
    both = set(pair.names.values())
    remaining = [
        p.point_id
        for p in expand_plan(pair.plan)
        if p.kind == "batch"
        and both <= set(p.servers)
        and not all(rd.bench_point_complete(n, p.point_id) for n in both)
    ]
    for side in pair.records:
        pair.records[side]["fallback_points"] = remaining
        pair.records[side]["fallback_reason"] = why
        pair._write(side)
        # A sequential start rewrites server.json: this copy keeps the interleaved record for a resume.
        name = pair.names[side]
        if rd.server_record(name).is_file():
            copy = aside / rd.server_record(name).relative_to(rd.root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(copy, read_json(rd.server_record(name)))
    return {pair.names[side]: dict(pair.records[side]) for side in pair.records}


def interleaved_record(rd: RunDir, name: str) -> dict[str, Any] | None:
    """The server's record from its interleaved part: the copy the newest fallback kept (a sequential
    start since may have rewritten server.json), else server.json where it holds a sleep_mode."""
    copies = sorted((rd.root / SUPERSEDED).glob(f"{FALLBACK_ASIDE}*/{rd.server_record(name).relative_to(rd.root)}"))
    if copies:
        return dict(read_json(copies[-1]))
    path = rd.server_record(name)
    current = dict(read_json(path)) if path.is_file() else {}
    return current if current.get("sleep_mode") else None


def resumed_fallback(plan: Plan, pair_names: tuple[str, str], rd: RunDir) -> dict[str, dict[str, Any]]:
    """Where an earlier attempt of this launch saw a wake fail its check (the recorded fallback, or a failed
    verdict recomputed from the recorded fingerprints): per server its sleep_mode record, the fallback
    completed if the stop came before it was; the rest goes on sequentially. {} where every wake matched."""
    candidate, baseline = pair_names
    names: dict[Side, str] = {"A": baseline, "B": candidate}
    records = {side: r for side, name in names.items() if (r := interleaved_record(rd, name)) and r.get("sleep_mode")}
    modes = {side: SleepModeRecord.model_validate(r["sleep_mode"]) for side, r in records.items()}
    why = next((reason for mode in modes.values() if (reason := wake.fell_back(mode))), None)
    if why is None:
        return {}
    if len(modes) == len(names) and all(mode.fallback_reason for mode in modes.values()):
        return {names[side]: dict(records[side]["sleep_mode"]) for side in records}
    pair = Pair(plan, names, rd)
    pair.records = {side: dict(records[side]["sleep_mode"]) for side in records}
    return _fall_back(pair, rd, why)


def keep_after_fallback(rd: RunDir, name: str, sleep_record: dict[str, Any], earlier: dict[str, Any]) -> None:
    """A server restarted sequentially after its pair fell back: its record keeps the interleaved part
    (sleep_mode with its fingerprints, the earlier starts and activity) before the new ones."""
    path = rd.server_record(name)
    if not path.is_file():
        return
    now = read_json(path)
    merge_into_server_record(
        rd,
        name,
        {
            "sleep_mode": sleep_record,
            "starts": list(earlier.get("starts") or []) + list(now.get("starts") or []),
            "activity": list(earlier.get("activity") or []) + list(now.get("activity") or []),
        },
    )


def run_interleaved_pair(
    plan: Plan, pair_names: tuple[str, str], model: PreparedModel, rd: RunDir, data_dir: Path | None, reporter: Reporter
) -> dict[str, dict[str, Any]]:
    """Start both servers of the pair, measure every point ABBA, run evals and numerics (launch 1
    only: ``rd`` is the launch's run directory), stop both. Returns {} or, where a woken server failed
    its integrity check, per server its sleep_mode record for ``keep_after_fallback`` once the rest
    has run sequentially."""
    candidate, baseline = pair_names
    names: dict[Side, str] = {"A": baseline, "B": candidate}
    pair = Pair(plan, names, rd)
    try:
        with reporter.status(": starting vLLM with sleep mode (side A)…", lead=baseline):
            pair.start("A", model)
        pair.put_to_sleep("A")
        with reporter.status(": starting vLLM with sleep mode (side B)…", lead=candidate):
            pair.start("B", model)
        reporter.line(f"interleaved pair up: A = {baseline}, B = {candidate}")
        for half, server in names.items() if rd.launch == 1 else ():  # evals run after the bench: refused before it
            check_evals_fit(plan, server, pair.servers[half].endpoint, rd)
        for half, server in names.items():
            check_agentic_contexts(points_for_server(plan, server, rd.launch), server, pair.servers[half].endpoint, rd)
        bench_pair(pair, rd, data_dir, reporter)
        if rd.launch == 1:  # launch r >= 2 measures the bench points only
            endpoints = {side: pair.servers[side].endpoint for side in names}
            run_evals_in_turns(plan, names, endpoints, lambda side: pair.on(side, -1, None), rd, data_dir, reporter)
            for side in ("A", "B") if plan.numerics is not None else ():
                pair.on(side, -1, None)
                with spent(rd, names[side], "numerics"):
                    run_numerics_for_server(plan, names[side], endpoints[side], rd, data_dir, reporter)
    except WakeIntegrityFailure as err:
        reporter.line(f"{err}: the pair's unmeasured and invalidated points run sequentially")
        return _fall_back(pair, rd, str(err))
    finally:
        with reporter.status(f"stopping {baseline} and {candidate}"):
            pair.stop()
    return {}
