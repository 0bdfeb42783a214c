"""The sweep against byog's loopback SSE server: files, resume, a dying server, summary determinism."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from byog.analysis import metrics as m
from byog.analysis.bench_summary import summarize_bench
from byog.bench.ceiling import FakeConfig, FakeServerThread
from byog.bench.sweep import run_bench_for_server
from byog.core.errors import UsageError
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.schemas.bench import read_request_rows
from tests.support import metrics_oracle as oracle
from tests.support.sweep import FakeRunning

# a real bench against a loopback fake: its timing is this box's (scripts/test.sh runs these alone)
pytestmark = pytest.mark.serial

PLAN = """
name: t
model: {path: /m}
servers:
  cand: {runtime: endpoint, url: "http://unused"}
  base: {runtime: endpoint, url: "http://unused"}
baseline: base
# fixed waves and no re-measuring: these tests count rows and files (the stopping rule and the
# re-measuring have their own tests below, on recorded wave timings)
remeasure: 0
workloads:
  - {kind: batch, name: decode, batch_sizes: [1, 3], isl: [5], osl: [12], warmup_waves: 1, waves: 3, ci_target: null}
  - {kind: concurrency, name: cl, concurrencies: [2], isl: [1], osl: [16], num_prompts: 6}
"""


def test_sweep_writes_raw_files_and_a_rerun_skips_complete_points(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    with FakeServerThread(FakeConfig(tokens_per_chunk=1, step_s=0.002)) as fake:
        first = run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), run_dir, NullReporter())
        assert first["run"] == ["decode-b1-isl5-osl12", "decode-b3-isl5-osl12", "cl-c2-isl1-osl16"]
        assert 0 < first["measuring_share"] <= 1
        rows = read_request_rows(run_dir.bench_rows("base", "decode-b3-isl5-osl12"))
        assert len(rows) == 3 * 4 and sum(r.warmup for r in rows) == 3
        assert all(r.n_in == 5 and r.n_out == 12 and sum(r.chunk_tokens) == 12 for r in rows)
        record = json.loads(run_dir.bench_point("base", "decode-b3-isl5-osl12").read_text())
        assert record["status"] == "complete" and record["prompts_label"] == "random-ids"
        assert record["counter_deltas"]["vllm:generation_tokens_total"] == 12 * 12
        # the snapshot after the warm-up wave: counters over the 3 measured waves only
        assert record["measured_counter_deltas"]["vllm:generation_tokens_total"] == 9 * 12
        assert run_dir.metrics_snapshot("base", "decode-b3-isl5-osl12", "before").is_file()
        assert run_dir.metrics_snapshot("base", "decode-b3-isl5-osl12", "measured").is_file()
        closed = json.loads(run_dir.bench_point("base", "cl-c2-isl1-osl16").read_text())
        assert closed["measured_counter_deltas"] is None  # warm-up and measured requests overlap in a closed loop
        assert record["power"]["available"] is False and record["power"]["t_ns"] is None  # no NVIDIA GPU here
        snapshot = {p: p.read_bytes() for p in (tmp_path / "bench").rglob("*") if p.is_file()}

        again = run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), run_dir, NullReporter())
        assert again["run"] == [] and len(again["skipped"]) == 3
        assert {p: p.read_bytes() for p in (tmp_path / "bench").rglob("*") if p.is_file()} == snapshot

        run_dir.bench_point("base", "cl-c2-isl1-osl16").unlink()  # an interrupted point: rows without record
        third = run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), run_dir, NullReporter())
        assert third["run"] == ["cl-c2-isl1-osl16"]


def test_prompts_are_identical_across_servers_and_differ_across_points(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    with FakeServerThread(FakeConfig(step_s=0.005)) as fake:
        for name in ("cand", "base"):
            run_bench_for_server(plan, name, FakeRunning(fake.base_url, name), run_dir, NullReporter())
        assert fake.app is not None and fake.app.requests == 2 * (4 + 12 + 6)
    summary = summarize_bench(run_dir, plan).model_dump(mode="json")
    assert [(p["server"], p["point_id"]) for p in summary["points"]][:2] == [
        ("cand", "decode-b1-isl5-osl12"),
        ("cand", "decode-b3-isl5-osl12"),
    ]
    # client saturation depends on what else this machine runs; every other check must pass
    reasons = [r for p in summary["points"] for r in p["invalid_reasons"] if not r.startswith("client saturated")]
    assert reasons == []
    # recomputation from the raw files gives the same bytes (verify relies on it)
    again = summarize_bench(run_dir, plan).model_dump(mode="json")
    assert json.dumps(summary, sort_keys=True, allow_nan=False) == json.dumps(again, sort_keys=True, allow_nan=False)
    metrics = {c["metric"] for c in summary["comparisons"]}
    assert metrics == {"decode_tok_s", "tpot_s.p50", "ttft_s.p50", "tok_s_user.p50"}
    b3 = next(p for p in summary["points"] if p["point_id"] == "decode-b3-isl5-osl12" and p["server"] == "base")
    assert b3["n_requests"] == 9 and b3["metrics"]["decode_tok_s"] > 0
    # Steps are counted by the client (one chunk per request per engine step, whatever the server's
    # counters say): the fake streams one token per chunk, so B = 3 tokens per step and the
    # steps/s x AL x B cross-check (AL = 1 without speculation) equals the measured decode tok/s.
    assert b3["metrics"]["tokens_per_step"] == pytest.approx(3.0)
    assert b3["metrics"]["crosscheck_decode_tok_s"] == pytest.approx(b3["metrics"]["decode_tok_s"])
    assert b3["metrics"]["crosscheck_ratio"] == pytest.approx(1.0)
    # no NVIDIA GPU here: the power part says why, with no numbers
    power = b3["metrics"]["power"]
    assert power["available"] is False and power["reason"] and power["energy_j"] is None
    for comparison in summary["comparisons"]:
        assert comparison["ci_low"] <= comparison["ratio"] * 1.5 and comparison["within_noise"] in (True, False)


def test_a_server_dying_mid_point_gets_a_failed_record_a_restart_and_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import byog.bench.sweep as sweep

    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    real_run_point = sweep.run_point
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:
        server = FakeRunning(fake.base_url, "base")

        def dying_run_point(base_url, model, point, prompts, progress, **kwargs):  # type: ignore[no-untyped-def]
            result = real_run_point(base_url, model, point, prompts, progress, **kwargs)
            if point.point_id == "decode-b3-isl5-osl12" and server.restarts == 0:
                server.dead = True
            return result

        monkeypatch.setattr(sweep, "run_point", dying_run_point)
        result = run_bench_for_server(plan, "base", server, run_dir, NullReporter())
        assert result["failed"] == ["decode-b3-isl5-osl12"] and result["restarts"] == 1
        assert result["run"] == ["decode-b1-isl5-osl12", "cl-c2-isl1-osl16"]  # the sweep went on
        record = json.loads(run_dir.bench_point("base", "decode-b3-isl5-osl12").read_text())
        assert record["status"] == "failed" and "engine core died" in record["log_tail"]
        assert not run_dir.bench_point_complete("base", "decode-b3-isl5-osl12")
        failed = next(
            p
            for p in summarize_bench(run_dir, plan).model_dump(mode="json")["points"]
            if p["point_id"] == "decode-b3-isl5-osl12" and p["server"] == "base"
        )
        assert failed["valid"] is False and failed["invalid_reasons"][0].startswith("point failed")

        rerun = run_bench_for_server(plan, "base", server, run_dir, NullReporter())
        assert rerun["run"] == ["decode-b3-isl5-osl12"] and sorted(rerun["skipped"]) == [
            "cl-c2-isl1-osl16",
            "decode-b1-isl5-osl12",
        ]
        assert json.loads(run_dir.bench_point("base", "decode-b3-isl5-osl12").read_text())["status"] == "complete"


def test_speculative_chunks_are_counted_by_tokens(tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    with FakeServerThread(FakeConfig(tokens_per_chunk=4, step_s=0.002)) as fake:
        run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), run_dir, NullReporter())
    rows = read_request_rows(run_dir.bench_rows("base", "decode-b1-isl5-osl12"))
    assert all(r.chunk_tokens == [4, 4, 4] for r in rows)
    point = next(
        p
        for p in summarize_bench(run_dir, plan).model_dump(mode="json")["points"]
        if p["point_id"] == "decode-b1-isl5-osl12" and p["server"] == "base"
    )
    assert [r for r in point["invalid_reasons"] if not r.startswith("client saturated")] == []
    # at B = 1 the fake emits 4 tokens per step, one chunk each: 4 tokens per client-counted step
    assert point["metrics"]["tokens_per_step"] == pytest.approx(4.0)
    # chunks of 4: per-request mean ITL = (t_last - t_first) / (12 - 4), TPOT = (t_last - t_first) / (12 - 1)
    for row in rows:
        assert oracle.itl_mean_s(row) == pytest.approx(m.tpot_s(row) * 11 / 8)


def test_plan_estimate_uses_measured_tpot_and_startup_from_an_earlier_run(tmp_path: Path) -> None:
    from byog.pipeline.planview import (
        TPOT_GUESS_S,
        estimate_plan,
        point_seconds,
    )

    plan = parse_plan(PLAN, "t.yaml")
    guess = estimate_plan(plan)
    b1 = next(r for r in guess["points"] if r["point_id"] == "decode-b1-isl5-osl12")
    assert b1["source"] == "guess" and b1["estimate_s"] == pytest.approx(4 * (0.1 + 11 * TPOT_GUESS_S))
    assert guess["total_estimate_s"] == pytest.approx(
        sum(r["estimate_s"] for r in guess["points"])  # endpoints: nothing starts
    )
    assert (
        "--enforce-eager" not in guess["servers"][0]["command"] and "already running" in guess["servers"][0]["command"]
    )

    run_dir = RunDir(tmp_path)
    (tmp_path / "plan.yaml").write_text(PLAN)
    with FakeServerThread(FakeConfig(step_s=0.003)) as fake:
        run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), run_dir, NullReporter())
    measured = estimate_plan(plan, from_run=tmp_path)
    tpot = next(
        p
        for p in summarize_bench(run_dir, plan).model_dump(mode="json")["points"]
        if p["server"] == "base" and p["point_id"] == "decode-b1-isl5-osl12"
    )["metrics"]["tpot_s"]["p50"]
    row = next(r for r in measured["points"] if r["server"] == "base" and r["point_id"] == "decode-b1-isl5-osl12")
    assert row["source"] == "measured" and row["tpot_s"] == pytest.approx(tpot)
    cand = next(r for r in measured["points"] if r["server"] == "cand" and r["point_id"] == "decode-b1-isl5-osl12")
    assert cand["source"] == "guess"  # the earlier run never measured 'cand'
    first = expand_plan(plan)[0]  # batch B=1, 1 warm-up + 3 waves, OSL 12
    assert point_seconds(first, tpot_s=0.01, ttft_s=0.1) == pytest.approx(4 * (0.1 + 11 * 0.01))


def test_rate_workload_sends_at_seeded_poisson_times() -> None:
    from byog.bench.prompts import Prompt
    from byog.bench.workloads import poisson_offsets_s, run_point
    from byog.plans.expand import BenchPoint
    from byog.schemas.plan import RandomPrompts

    offsets = poisson_offsets_s(20.0, 8, seed=3)
    assert offsets == poisson_offsets_s(20.0, 8, seed=3) and offsets != poisson_offsets_s(20.0, 8, seed=4)
    assert all(b > a for a, b in pairwise(offsets))
    point = BenchPoint(
        point_id="r",
        workload="r",
        kind="rate",
        rate=20.0,
        isl=2,
        osl=4,
        prompts=RandomPrompts(),
        num_prompts=8,
        arrival_seed=3,
    )
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:
        run = run_point(fake.base_url, "fake", point, [Prompt([300, 301], 2)] * 8)
    sends = [r.t_send_ns for r in sorted(run.records, key=lambda r: r.request_index)]
    assert all(r.error is None and r.n_out == 4 for r in run.records)
    assert sends == sorted(sends)  # request i leaves at offset i, in order
    assert (sends[-1] - sends[0]) / 1e9 == pytest.approx(offsets[-1] - offsets[0], abs=0.05)


# The log of a real CPU vLLM 0.32 server started with synthetic acceptance (issue 13), trimmed.
SYNTHETIC_LOG = (Path(__file__).parents[1] / "fixtures" / "vllm-cpu-synthetic-acceptance.log").read_text()


def test_vllms_own_reason_is_the_root_cause_of_this_start() -> None:
    from byog.analysis.server_log import root_cause

    # the worker's AssertionError, not the engine's "Worker failed ... see the stack trace above" nor
    # EngineDeadError after it, nor the earlier start's ValueError before the last start marker
    assert root_cause(SYNTHETIC_LOG) == "AssertionError: Synthetic acceptance not supported with CPU sampling"
    assert root_cause("(APIServer) WARNING x [u.py:1] fd limit errors like OSError: [Errno 24] may follow") is None
    wrapped_only = (
        "Traceback (most recent call last):\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore "
        "encountered an issue."
    )
    assert root_cause(wrapped_only) == "EngineDeadError: EngineCore encountered an issue."


def _die_during_points(monkeypatch: pytest.MonkeyPatch, server: FakeRunning, error: str) -> None:
    """Every point from now on: its requests fail with ``error`` and the server is dead after it."""
    import byog.bench.sweep as sweep

    real = sweep.run_point

    def failing_run_point(base_url, model, point, prompts, progress, **kwargs):  # type: ignore[no-untyped-def]
        result = real(base_url, model, point, prompts, progress, **kwargs)
        for row in result.records:
            row.error = error
        server.dead = True
        return result

    monkeypatch.setattr(sweep, "run_point", failing_run_point)


def test_a_server_that_cannot_serve_is_not_restarted_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM accepts the config, then fails the first request (the engine dies): byog records vLLM's
    reason, does not restart the server and does not try its other points."""
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:

        class Failing(FakeRunning):
            def log_tail(self, lines: int = 30) -> str:
                return SYNTHETIC_LOG

        server = Failing(fake.base_url, "base")

        _die_during_points(
            monkeypatch, server, "EngineCore encountered an issue. See stack trace (above) for the root cause."
        )
        result = run_bench_for_server(plan, "base", server, run_dir, NullReporter())
    assert result["restarts"] == 0 and server.restarts == 0
    assert result["failed"] == ["decode-b1-isl5-osl12"] and result["run"] == []
    assert "AssertionError: Synthetic acceptance not supported with CPU sampling" in result["aborted"]
    assert "its other points are not run" in result["aborted"]
    record = json.loads(run_dir.bench_point("base", "decode-b1-isl5-osl12").read_text())
    assert (
        record["error"]
        == "the server died during the point: AssertionError: Synthetic acceptance not supported with CPU sampling"
    )
    assert not run_dir.bench_point("base", "decode-b3-isl5-osl12").is_file()


def test_a_server_that_served_before_this_sweep_is_restarted_not_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose counters show tokens generated since it started (an earlier sweep, a node
    killed under a serving cluster) died, it did not fail to serve: byog restarts it, even when the
    point is the first of this sweep and none of its requests succeeded."""
    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:
        server = FakeRunning(fake.base_url, "base")
        assert run_bench_for_server(plan, "base", server, run_dir, NullReporter())["failed"] == []
        again = "decode-b3-isl5-osl12"
        run_dir.bench_point(server.name, again).unlink()  # one point to measure again

        _die_during_points(monkeypatch, server, "connection reset")
        result = run_bench_for_server(plan, "base", server, run_dir, NullReporter())
    assert result["failed"] == [again] and result["restarts"] == 1 and server.restarts == 1
    assert result["aborted"] is None, result["aborted"]


def test_a_server_whose_metrics_did_not_answer_before_the_point_gets_its_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No /metrics before the point is no evidence that the server never served: it is restarted,
    where a server whose counters say it never generated a token is given up."""
    import byog.bench.sweep as sweep

    plan = parse_plan(PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:
        server = FakeRunning(fake.base_url, "base")

        def no_metrics_before(run_dir, server_name, point_id, when, base_url):  # type: ignore[no-untyped-def]
            return None if when == "before" else real_snapshot(run_dir, server_name, point_id, when, base_url)

        real_snapshot = sweep.snapshot_metrics
        _die_during_points(monkeypatch, server, "connection reset")
        monkeypatch.setattr(sweep, "snapshot_metrics", no_metrics_before)
        result = run_bench_for_server(plan, "base", server, run_dir, NullReporter())
    assert result["restarts"] == 1 and server.restarts == 1
    assert "served no request" not in (result["aborted"] or "")


def test_power_is_sampled_only_where_the_servers_gpus_are() -> None:
    from byog.bench.sweep import gpu_indices, power_unknown_reason
    from byog.schemas.plan import server_config

    assert gpu_indices(server_config(runtime="local", env={"CUDA_VISIBLE_DEVICES": "2,3"})) == [2, 3]
    assert gpu_indices(server_config(runtime="docker", image="i", gpus=[1])) == [1]
    assert gpu_indices(server_config(runtime="local")) is None  # every GPU NVML sees
    assert (
        gpu_indices(server_config(runtime="local", env={"CUDA_VISIBLE_DEVICES": "GPU-5f2e"})) is None
    )  # UUIDs: not mapped
    assert power_unknown_reason(server_config(runtime="endpoint", url="http://127.0.0.1:8000")) is None
    reason = power_unknown_reason(server_config(runtime="endpoint", url="http://gpu-box:8000"))
    assert reason and "runs elsewhere" in reason
    remote = server_config(runtime="ssh", nodes=2, hosts=["u@tray0", "u@tray1"])
    assert "u@tray0, u@tray1" in (power_unknown_reason(remote) or "")


ONE_SERVER = """
name: t
model: {path: /m}
servers:
  base: {runtime: endpoint, url: "http://unused"}
baseline: base
workloads:
"""
STOPPING_PLAN = (
    ONE_SERVER
    + "  - {kind: batch, name: decode, batch_sizes: [2], isl: [5], osl: [12], warmup_waves: 1, waves: 6,"
    + " min_waves: 3}\n"
)
TIGHT_MS = [1.0]  # every wave decodes at one rate
NOISY_MS = [1.0, 1.3, 0.8, 1.25, 0.9, 1.2, 0.95]


@pytest.mark.parametrize(("steps_ms", "waves", "reason"), [(TIGHT_MS, 3, "target"), (NOISY_MS, 6, "cap")])
def test_the_sweep_stops_a_tight_point_at_its_minimum_and_a_noisy_one_at_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps_ms: list[float], waves: int, reason: str
) -> None:
    import byog.bench.sweep as sweep
    from byog.analysis.request_columns import read_request_columns
    from byog.analysis.validity import load_point_record
    from byog.analysis.wave_stopping import recorded_problem
    from tests.support.waves import MS, replaying_run_point

    plan = parse_plan(STOPPING_PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    monkeypatch.setattr(sweep, "run_point", replaying_run_point([int(s * MS) for s in steps_ms]))
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:  # prompts and /metrics only
        run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), run_dir, NullReporter())
    point_id = "decode-b2-isl5-osl12"
    record = load_point_record(run_dir.bench_point("base", point_id))
    assert record.stopping is not None
    assert (record.stopping.waves, record.stopping.reason) == (waves, reason)
    assert (record.stopping.target, record.stopping.min_waves, record.stopping.max_waves) == (0.01, 3, 6)
    rows = read_request_rows(run_dir.bench_rows("base", point_id))
    assert len(rows) == 2 * (1 + waves) and len(record.stopping.half_widths) == waves  # every wave kept
    # what verify does: the same decision from the stored rows and the plan's rule
    planned = next(p for p in expand_plan(plan) if p.point_id == point_id)
    assert recorded_problem(record, read_request_columns(run_dir.bench_rows("base", point_id)), planned) is None


REMEASURE_PLAN = (
    ONE_SERVER
    + "  - {kind: batch, name: decode, batch_sizes: [1], isl: [5], osl: [12], warmup_waves: 0, waves: 2,"
    + " ci_target: null}\n"
)
SATURATED = "client saturated: it used 97% of a core (limit 90%)"
PERMANENT = "prefix cache hit 12 prompt tokens: prefill was partly skipped"


@pytest.mark.parametrize(
    ("first_reasons", "attempts", "remeasured"),
    [
        ([[SATURATED], []], 2, 1),  # transient, then valid: measured again once
        ([[SATURATED], [SATURATED], [SATURATED]], 3, 2),  # transient every time: at most `remeasure` (2) more
        ([[PERMANENT], []], 1, 0),  # the configuration's: would repeat, so not measured again
        ([[SATURATED, PERMANENT], []], 1, 0),  # a permanent cause beside a transient one
    ],
    ids=["transient-then-valid", "transient-bounded", "permanent", "mixed"],
)
def test_a_transient_invalid_point_is_measured_again_and_a_permanent_one_is_not(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    first_reasons: list[list[str]],
    attempts: int,
    remeasured: int,
) -> None:
    import byog.bench.sweep as sweep
    from byog.analysis.validity import load_point_record
    from byog.bench.settle import Settled
    from tests.support.waves import MS, replaying_run_point

    plan = parse_plan(REMEASURE_PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    verdicts = iter(first_reasons)
    waited: list[list[str]] = []
    monkeypatch.setattr(sweep, "run_point", replaying_run_point([MS]))
    monkeypatch.setattr(sweep, "invalid_reasons", lambda record, rows: next(verdicts))
    monkeypatch.setattr(sweep, "wait_until_clear", lambda reasons, gpus: waited.append(reasons) or Settled(1.5, True))
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:
        result = run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), run_dir, NullReporter())
        resets = fake.app.cache_resets
    point_id = "decode-b1-isl5-osl12"
    assert result["remeasured"] == ({point_id: remeasured} if remeasured else {})
    assert len(waited) == remeasured  # it waited for the cause to clear before each re-measurement
    record = load_point_record(run_dir.bench_point("base", point_id))
    # each re-measure sends the first attempt's prompts again: from an emptied prefix cache, recorded
    assert resets >= remeasured and record.prefix_cache_reset == (True if remeasured else None)
    assert [a.attempt for a in record.attempts] == list(range(1, remeasured + 1))
    assert all(a.invalid_reasons == [SATURATED] and a.waited_s == 1.5 and a.cleared for a in record.attempts)
    for n in range(1, attempts):  # every earlier attempt's files stay, beside the final ones
        old_record, old_rows = run_dir.bench_attempt("base", point_id, n)
        assert old_rows.is_file() and load_point_record(old_record).status == "complete"
    assert run_dir.bench_point_ids("base") == [point_id]  # attempts are not points
    assert (point_id in result["invalid"]) == bool(first_reasons[attempts - 1])
    [summary] = summarize_bench(run_dir, plan).points
    assert summary.remeasured == (remeasured or None)


def test_a_server_that_refuses_the_cache_reset_keeps_its_invalid_point_not_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without /reset_prefix_cache (an endpoint without dev mode) a second attempt would be served its
    first attempt's prompts from the cache: the point stays as measured, invalid, and the run says why."""
    import byog.bench.sweep as sweep
    from byog.analysis.validity import load_point_record
    from tests.support.reporter import RecordingReporter
    from tests.support.waves import MS, replaying_run_point

    plan = parse_plan(REMEASURE_PLAN, "t.yaml")
    run_dir = RunDir(tmp_path)
    monkeypatch.setattr(sweep, "run_point", replaying_run_point([MS]))
    monkeypatch.setattr(sweep, "invalid_reasons", lambda record, rows: [SATURATED])
    monkeypatch.setattr(sweep, "wait_until_clear", lambda reasons, gpus: pytest.fail("nothing to wait for"))
    said = RecordingReporter()
    with FakeServerThread(FakeConfig(step_s=0.001, dev_mode=False)) as fake:
        result = run_bench_for_server(plan, "base", FakeRunning(fake.base_url, "base"), run_dir, said)
    point_id = "decode-b1-isl5-osl12"
    assert result["remeasured"] == {} and point_id in result["invalid"]
    assert load_point_record(run_dir.bench_point("base", point_id)).attempts == []
    assert any("not measured again: the server refused /reset_prefix_cache" in line for line in said.lines), said.lines


DECODE = "  - {kind: batch, name: decode, batch_sizes: [1], isl: [5], osl: [4], waves: 1, ci_target: null}\n"
AGENT = (  # 2 turns: 8 shared + 6 in + 4 out, then 3 more in + 4 out: at most 25 tokens of context
    "  - kind: agentic\n"
    "    name: agent\n"
    "    sessions: 1\n"
    "    warmup_sessions: 0\n"
    "    source: {kind: synthetic, turns: {kind: constant, value: 2}, shared_prefix_tokens: 8, fanout: null,\n"
    "             first_input_tokens: {kind: constant, value: 6}, input_tokens: {kind: constant, value: 3},\n"
    "             output_tokens: {kind: constant, value: 4}, think_time_s: {kind: constant, value: 0.0}}\n"
)
UNSIZED = (
    "agentic point 'agent-c1' has no context to cut its sessions at on server 'base': neither the plan "
    "(workload 'agent' has no max_context) nor the server (its /v1/models card has no max_model_len) states one; "
    "set max_context in workload 'agent' of the plan"
)


def test_an_agentic_point_neither_plan_nor_server_sizes_is_refused_before_any_request(tmp_path: Path) -> None:
    """The server's /v1/models card has no max_model_len and the plan states no context: the sweep refuses
    (it once cut the sessions at a guessed 8192) before it sends anything, the batch point before it included."""
    from byog.plans.expand import AgenticContextUnknown
    from byog.runtimes.endpoint import EndpointServer
    from byog.schemas.plan import EndpointConfig
    from byog.schemas.server import PreparedModel
    from tests.support.fake_vllm import FakeVllm

    fake = FakeVllm(max_model_len=None)
    try:
        model = PreparedModel(path="/m", served_name="fake", tokenizer="/m", max_model_len=None)
        server = EndpointServer("base", EndpointConfig(url=fake.base_url), model, tmp_path / "server")
        plan = parse_plan(ONE_SERVER + DECODE + AGENT, "t.yaml")
        with pytest.raises(AgenticContextUnknown) as refused:
            run_bench_for_server(plan, "base", server, RunDir(tmp_path / "run"), NullReporter())
    finally:
        fake.close()
    assert str(refused.value) == UNSIZED
    assert fake.requests == [] and not (tmp_path / "run" / "bench").exists()


def test_a_refused_agentic_point_loses_nothing_measured_and_the_plans_max_context_resumes_the_run(
    tmp_path: Path,
) -> None:
    """A point measured before the agentic workload joined the plan stays as it is through the refusal;
    once the plan states max_context, the rerun measures only the agentic point, cut at the plan's context."""
    from byog.plans.expand import AgenticContextUnknown

    run_dir = RunDir(tmp_path)
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:
        silent = FakeRunning(fake.base_url, "base")  # a server that does not say its context
        run_bench_for_server(parse_plan(ONE_SERVER + DECODE, "t.yaml"), "base", silent, run_dir, NullReporter())
        measured = {p: p.read_bytes() for p in (tmp_path / "bench").rglob("*") if p.is_file()}
        assert fake.app is not None and (sent := fake.app.requests) > 0
        with pytest.raises(AgenticContextUnknown, match="^agentic point 'agent-c1' has no context"):
            run_bench_for_server(parse_plan(ONE_SERVER + DECODE + AGENT, "t.yaml"), "base", silent, run_dir)
        assert fake.app.requests == sent
        assert {p: p.read_bytes() for p in (tmp_path / "bench").rglob("*") if p.is_file()} == measured
        fixed = parse_plan(
            ONE_SERVER + DECODE + AGENT.replace("name: agent\n", "name: agent\n    max_context: 64\n"), "t.yaml"
        )
        rerun = run_bench_for_server(fixed, "base", silent, run_dir, NullReporter())
    assert rerun["run"] == ["agent-c1"] and rerun["skipped"] == ["decode-b1-isl5-osl4"]
    assert json.loads(run_dir.bench_point("base", "agent-c1").read_text())["point"]["max_context"] == 64


def test_the_servers_context_sizes_an_agentic_point_the_plan_leaves_open_and_refuses_one_sized_past_it(
    tmp_path: Path,
) -> None:
    """The record keeps the server's stated context as the point's max_context; a plan's max_context over
    it is refused before any request (its long turns would be rejected), as byog plan refuses it against a
    context the plan states."""
    run_dir = RunDir(tmp_path)
    with FakeServerThread(FakeConfig(step_s=0.001)) as fake:
        server = FakeRunning(fake.base_url, "base", max_model_len=48)
        run_bench_for_server(parse_plan(ONE_SERVER + AGENT, "t.yaml"), "base", server, run_dir, NullReporter())
        assert json.loads(run_dir.bench_point("base", "agent-c1").read_text())["point"]["max_context"] == 48
        assert fake.app is not None and (sent := fake.app.requests) > 0
        over = parse_plan(ONE_SERVER + AGENT.replace("name: agent\n", "name: over\n    max_context: 64\n"), "t.yaml")
        with pytest.raises(
            UsageError, match="^workload 'over' cuts sessions at max_context 64 tokens but server 'base'"
        ):
            run_bench_for_server(over, "base", server, run_dir, NullReporter())
        assert fake.app.requests == sent and not run_dir.bench_point("base", "over-c1").exists()
