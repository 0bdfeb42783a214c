"""An interleaved pair: refused before start where it cannot run, its swaps against vLLM's sleep
endpoints (byog's loopback vLLM), the ABBA visits of a point, and the time it records."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from byog.analysis.time_to_verdict import time_to_verdict, union_length
from byog.bench.ceiling import FakeConfig, FakeServerThread
from byog.core.errors import UsageError
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.pipeline import interleave, interleave_check, launch
from byog.pipeline.wake_check import WakeCheck, WakeIntegrityFailure
from byog.plans.expand import AgenticContextUnknown, expand_plan
from byog.plans.load import parse_plan
from byog.plans.tasks import EvalDoesNotFit
from byog.runtimes.record import utc_now, write_server_record
from byog.runtimes.sleep_mode import PlatformFacts, SleepControl
from byog.schemas.plan import Plan, ServerConfig
from byog.schemas.server import PreparedModel, ServerRecord
from tests.support.fake_vllm import FakeVllm
from tests.support.interleave_run import SWEEP_PLAN, FakeServer, interleaved_sweep

# a real bench against a loopback fake: its timing is this box's (scripts/test.sh runs these alone)
pytestmark = pytest.mark.serial

PLAN = """\
name: interleave-fake
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  cand: {}
  stock: {args: [--enforce-eager]}
baseline: stock
pairs: [{candidate: cand, baseline: stock, interleave: true}]
workloads:
  - {kind: batch, isl: [16], osl: [8], batch_sizes: [1, 2], warmup_waves: 1, waves: 4}
"""


def write_record(path: Path, data: dict[str, Any]) -> None:
    write_server_record(path, ServerRecord.model_validate(data))


def _plan(text: str = PLAN) -> Plan:
    return parse_plan(text, "plan.yaml")


def test_the_cpu_platform_is_refused_before_anything_starts() -> None:
    with pytest.raises(UsageError, match="runs on CpuPlatform, which has no sleep mode"):
        interleave_check.check_interleave(_plan(), facts=PlatformFacts("CpuPlatform", False), available=2**40)
    interleave_check.check_interleave(_plan(), facts=PlatformFacts("CudaPlatform", True), available=2**40)


def test_two_sides_that_do_not_fit_host_memory_are_refused(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 4096)
    plan = _plan(PLAN.replace('"builtin:smollm2-135m-instruct"', f'"{tmp_path}"'))
    with pytest.raises(UsageError, match="both need"):
        interleave_check.check_interleave(plan, facts=PlatformFacts("CudaPlatform", True), available=8191)
    interleave_check.check_interleave(plan, facts=PlatformFacts("CudaPlatform", True), available=8192)


def test_a_server_in_two_interleaved_pairs_is_refused() -> None:
    text = PLAN.replace(
        "pairs: [{candidate: cand, baseline: stock, interleave: true}]",
        "pairs: [{candidate: cand, baseline: stock, interleave: true},"
        " {candidate: cand, baseline: other, interleave: true}]",
    ).replace("  stock: {args: [--enforce-eager]}", "  stock: {args: [--enforce-eager]}\n  other: {}")
    with pytest.raises(Exception, match="one interleaved pair only"):
        _plan(text)


def test_an_interleaved_pair_takes_launches_in_abba_rounds_and_refuses_a_lone_aa_pair() -> None:
    from byog.pipeline.run import launch_rounds

    plan = _plan(PLAN + "launches: 2\n")
    assert plan.launches_of("cand") == plan.launches_of("stock") == 2
    rounds = launch_rounds(plan)
    assert rounds == [(1, "cand"), (1, "stock"), (2, "stock"), (2, "cand")]  # ABBA
    assert interleave.interleaved_rounds(plan, rounds) == [(1, ("cand", "stock")), (2, ("cand", "stock"))]
    with pytest.raises(Exception, match="set 'launches: 2' or more"):
        _plan(PLAN + "aa_pair: true\n")
    assert _plan(PLAN + "launches: 2\naa_pair: true\n").launches_of("cand") == 2


def test_the_pair_is_one_round_where_its_first_server_was() -> None:
    rounds = interleave.interleaved_rounds(_plan(), [(1, "stock"), (1, "cand"), (1, "x")])
    assert rounds == [(1, ("cand", "stock")), (1, "x")]


def test_a_batch_point_visits_one_wave_at_a_time_in_abba_order() -> None:
    point = expand_plan(_plan())[0]
    visits = interleave.visits(point)
    assert [(seq, side) for seq, side, _, _ in visits] == list(enumerate("ABBAABBA"))
    # each side's first visit carries the warm-up wave, then one measured wave per visit
    assert [(first, end) for _, side, first, end in visits if side == "A"] == [(0, 2), (2, 3), (3, 4), (4, 5)]


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, FakeVllm]]:
    made = {"stock": FakeVllm(sleep_mode=True), "cand": FakeVllm(sleep_mode=True)}
    launched: list[ServerConfig] = []

    class Runtime:
        def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> Any:
            launched.append(config)
            write_record(
                server_dir / "server.json",
                {"name": name, "starts": [{"started_at": utc_now(), "ready_after_s": 2.0}]},
            )
            return FakeServer(name, made[name])

    monkeypatch.setattr(launch, "runtime_for", lambda config: Runtime())
    yield made
    assert all("--enable-sleep-mode" in c.args and c.env["VLLM_SERVER_DEV_MODE"] == "1" for c in launched)
    for fake in made.values():
        fake.close()


def test_swaps_sleep_the_one_then_wake_the_other_and_are_recorded(fakes: dict[str, FakeVllm], tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    pair = interleave.Pair(_plan(), {"A": "stock", "B": "cand"}, rd)
    model = PreparedModel(path="m", served_name="fake", tokenizer="m")
    pair.start("A", model)
    pair.put_to_sleep("A")
    pair.start("B", model)
    for seq, side in enumerate("ABBAABBA"):
        pair.on(side, seq, "p")  # type: ignore[arg-type]
    # B is up after its start; A is woken for visits 0, 3 and 7, B for 1 and 5; 2, 4 and 6 need no swap
    # (each swap is confirmed by an /is_sleeping read)
    sleep, wake = ("sleep?level=1", "is_sleeping"), ("wake_up", "is_sleeping")
    assert fakes["stock"].calls == ["is_sleeping", *sleep, *wake, *sleep, *wake, *sleep, *wake]
    assert fakes["cand"].calls == ["is_sleeping", *sleep, *wake, *sleep, *wake, *sleep]
    stock = ServerRecord.model_validate(read_json(rd.server_record("stock")))
    assert stock.sleep_mode is not None and stock.sleep_mode.partner == "cand"
    assert [s.seq for s in stock.sleep_mode.swaps] == [0, 3, 7]
    assert all(s.from_server == "cand" and s.sleep_s >= 0 and s.wake_s >= 0 for s in stock.sleep_mode.swaps)
    assert stock.sleep_mode.asleep_host_rss_bytes is None  # a fake has no process
    cand = ServerRecord.model_validate(read_json(rd.server_record("cand")))
    assert cand.sleep_mode is not None and [s.seq for s in cand.sleep_mode.swaps] == [1, 5]
    # each side's references before its first sleep, then each wake's swap and its check
    assert [span.kind for span in cand.activity] == ["wake-check", "swap", "wake-check", "swap", "wake-check"]
    pair.stop()


def test_a_server_without_the_sleep_endpoints_is_refused_after_it_starts(
    fakes: dict[str, FakeVllm], tmp_path: Path
) -> None:
    fakes["stock"].sleep_mode = False
    pair = interleave.Pair(_plan(), {"A": "stock", "B": "cand"}, RunDir(tmp_path))
    with pytest.raises(UsageError, match="does not serve /is_sleeping.*interleave: false"):
        pair.start("A", PreparedModel(path="m", served_name="fake", tokenizer="m"))


def test_a_side_whose_context_cannot_hold_its_evals_stops_the_pair_before_the_bench(
    fakes: dict[str, FakeVllm], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'stock' says max_model_len 100 once up; the plan's 64-token arithmetic answers need 128."""
    monkeypatch.setattr(interleave, "bench_pair", lambda *_: pytest.fail("the bench ran"))
    fakes["stock"].max_model_len = 100
    plan = _plan(
        PLAN + "evals:\n  - {task: arithmetic_generated, limit: 2, passes: 1, gen_kwargs: {max_gen_toks: 64}}\n"
    )
    model = PreparedModel(path="m", served_name="fake", tokenizer="m")
    with pytest.raises(
        EvalDoesNotFit, match="server 'stock' holds at most max_model_len = 100: raise it to at least 128"
    ):
        interleave.run_interleaved_pair(plan, ("cand", "stock"), model, RunDir(tmp_path), None, NullReporter())
    assert not any("messages" in r for fake in fakes.values() for r in fake.requests)  # no eval request


def test_an_agentic_point_neither_the_plan_nor_a_side_sizes_stops_the_pair_before_the_bench(
    fakes: dict[str, FakeVllm], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither side says its context once up, and the plan states none: refused once both are up (their
    wake-check references sent), before the pair's first point."""
    monkeypatch.setattr(interleave, "bench_pair", lambda *_: pytest.fail("the bench ran"))
    for fake in fakes.values():
        fake.max_model_len = None  # its /v1/models card states no context
    plan = _plan(PLAN + "  - {kind: agentic, name: agent}\n")
    model = PreparedModel(path="m", served_name="fake", tokenizer="m")
    with pytest.raises(AgenticContextUnknown, match="^agentic point 'agent-c1' has no context .* on server 'stock'"):
        interleave.run_interleaved_pair(plan, ("cand", "stock"), model, RunDir(tmp_path), None, NullReporter())
    assert not (tmp_path / "bench").exists()  # the bench never started (it would fail the test)


def test_time_to_verdict_from_starts_and_spans(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    (tmp_path / "plan.yaml").write_text(PLAN)
    t0 = 1_700_000_000.0
    iso = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t0))
    iso_b = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t0 + 100))
    write_record(
        rd.server_record("stock"),
        {
            "name": "stock",
            "starts": [{"started_at": iso, "ready_after_s": 90.0}],
            "activity": [
                {"kind": "measure", "t0_unix_s": t0 + 200, "t1_unix_s": t0 + 210},
                {"kind": "eval", "t0_unix_s": t0 + 230, "t1_unix_s": t0 + 260},
            ],
        },
    )
    write_record(
        rd.server_record("cand"),
        {
            "name": "cand",
            "starts": [{"started_at": iso_b, "ready_after_s": 80.0}],
            "activity": [
                {"kind": "swap", "t0_unix_s": t0 + 199, "t1_unix_s": t0 + 200},
                {"kind": "measure", "t0_unix_s": t0 + 210, "t1_unix_s": t0 + 220},
            ],
        },
    )
    found = time_to_verdict(rd, _plan())
    assert found is not None
    run = found.run
    assert (run.wall_s, run.starting_s, run.measuring_s, run.evaluating_s, run.swapping_s) == (
        260.0,
        170.0,
        20.0,
        30.0,
        1.0,
    )
    # busy: [0, 90] + [100, 180] + [199, 220] + [230, 260] = 221 s of 260
    assert run.idle_s == pytest.approx(39.0)
    assert run.measuring_share == pytest.approx(20 / 260)
    cand = next(s for s in found.servers if s.server == "cand")
    assert (cand.wall_s, cand.starting_s, cand.idle_s) == (120.0, 80.0, pytest.approx(29.0))


def test_union_length_counts_overlaps_once() -> None:
    assert union_length([(0, 10), (5, 15), (20, 21)]) == 16


def test_an_interleaved_sweep_writes_abba_rows_that_the_summary_pairs(tmp_path: Path) -> None:
    from byog.analysis.bench_summary import summarize_bench
    from byog.analysis.interleave import side_of
    from byog.analysis.interleave_records import check_interleaving
    from byog.schemas.bench import read_request_rows

    log: list[str] = []
    rd, plan = interleaved_sweep(tmp_path, log)
    batch = [p for p in expand_plan(plan) if p.kind == "batch"][0]
    rows = {name: read_request_rows(rd.bench_rows(name, batch.point_id)) for name in ("base", "cand")}
    for name, side in (("base", "A"), ("cand", "B")):
        measured = [r for r in rows[name] if not r.warmup]
        assert {r.interleave_side for r in rows[name]} == {side}
        assert all(side_of(r.interleave_seq) == side for r in measured if r.interleave_seq is not None)
        assert sorted({r.wave for r in measured}) == [1, 2, 3, 4]  # warm-up wave 0, then one wave per visit
    assert log[:2] == ["sleep cand", "wake base"]  # visit 0 is A's
    assert check_interleaving(rd, plan).problems == []  # the records the run wrote show it took turns
    summary = summarize_bench(rd, plan)
    units = {c.point_id: c.units for c in summary.comparisons if c.metric == "decode_tok_s"}
    assert units[batch.point_id] == "ABBA blocks"
    effects = [w for w in summary.wake_effects if w.point_id == batch.point_id]
    assert {(w.server, w.woken_waves, w.continued_waves) for w in effects} == {("base", 3, 1), ("cand", 2, 2)}
    cl = [p for p in expand_plan(plan) if p.kind == "concurrency"][0]
    assert rd.bench_point_complete("base", cl.point_id) and rd.bench_point_complete("cand", cl.point_id)


def test_a_run_without_activity_spans_has_no_time_to_verdict(tmp_path: Path) -> None:
    """Bundles packed before servers recorded activity: their recomputed summary (and report) gains nothing."""
    rd = RunDir(tmp_path)
    write_record(
        rd.server_record("stock"), {"name": "stock", "starts": [{"started_at": utc_now(), "ready_after_s": 9.0}]}
    )
    assert time_to_verdict(rd, _plan()) is None


def test_the_report_section_shows_the_time_spent() -> None:
    from byog.report.sections import time_spent
    from byog.schemas.summary import ServerTime, TimeSpent, TimeToVerdict

    spent = dict(
        wall_s=100.0, starting_s=60.0, measuring_s=30.0, evaluating_s=0.0, swapping_s=1.5, checking_s=2.0, idle_s=6.5
    )
    ttv = TimeToVerdict(run=TimeSpent(**spent, measuring_share=0.3), servers=[ServerTime(server="stock", **spent)])

    class Ctx:
        report_format = 8

        class summary:
            time_to_verdict = ttv
            phases = None

            class bench:
                wake_effects: list[object] = []

    lines = time_spent.section(Ctx())  # type: ignore[arg-type]
    assert lines[0] == "## Time to verdict"
    assert (
        "| Who | Wall s | Starting | Measuring | Evaluating | Swapping | Checking | Idle | Measuring share |" in lines
    )
    assert (
        "| run | 100 | 60 | 30 | 0 | 1.5 | 2.0 | 6 | 30.0% |" in lines
        or "| run | 100 | 60 | 30 | 0 | 1.5 | 2.0 | 7 | 30.0% |" in lines
    )
    Ctx.report_format = 7  # a bundle of format 7 re-renders as it was written: the checks were idle then
    assert "| Who | Wall s | Starting | Measuring | Evaluating | Swapping | Idle | Measuring share |" in (
        time_spent.section(Ctx())  # type: ignore[arg-type]
    )


def _checked_sweep(
    folder: Path, stock: FakeVllm, cand: FakeVllm
) -> tuple[RunDir, Plan, interleave.Pair, WakeIntegrityFailure | None]:
    """SWEEP_PLAN's pair interleaved: bench traffic to two streaming fakes, sleep, wake and fingerprints to
    two FakeVllm doubles (vLLM's sleep routes; CPU vLLM has none) that may change after a wake."""
    plan = parse_plan(SWEEP_PLAN, "plan.yaml")
    rd = RunDir(folder)
    (folder / "plan.yaml").write_text(SWEEP_PLAN)
    doubles = {"base": stock, "cand": cand}
    failure = None
    with FakeServerThread(FakeConfig(step_s=0.001)) as fa, FakeServerThread(FakeConfig(step_s=0.001)) as fb:
        pair = interleave.Pair(plan, {"A": "base", "B": "cand"}, rd)
        for side, name, fake, partner in (("A", "base", fa, "cand"), ("B", "cand", fb, "base")):
            write_server_record(rd.server_record(name), ServerRecord(name=name))
            pair.servers[side] = FakeServer(name, fake)  # type: ignore[index,arg-type]
            pair.controls[side] = SleepControl(name, doubles[name].base_url)  # type: ignore[index]
            pair.records[side] = {"partner": partner, "side": side, "level": 1, "swaps": []}  # type: ignore[index]
            pair.checks[side] = WakeCheck(plan, (name, partner), doubles[name].base_url, "fake")  # type: ignore[index]
            pair.checks[side].before_first_sleep()  # type: ignore[index]
        stock.sleeping = True
        pair.awake = "B"
        try:
            interleave.bench_pair(pair, rd, None, NullReporter())
        except WakeIntegrityFailure as err:
            failure = err
    return rd, plan, pair, failure


def test_a_woken_server_that_matches_passes_every_wake_check_whose_time_is_its_own(tmp_path: Path) -> None:
    from byog.analysis.interleave_records import check_interleaving
    from byog.analysis.phases import phase_time, read_phases
    from byog.analysis.time_to_verdict import server_records
    from byog.analysis.wake import integrity

    stock, cand = FakeVllm(sleep_mode=True), FakeVllm(sleep_mode=True)
    try:
        rd, plan, _, failure = _checked_sweep(tmp_path, stock, cand)
    finally:
        stock.close()
        cand.close()
    assert failure is None
    record = ServerRecord.model_validate(read_json(rd.server_record("base"))).sleep_mode
    assert record is not None
    # two references per batch size (1 and the plan's 3), then one per batch size after each of its wakes
    assert [f.wake for f in record.fingerprints if f.batch == 1] == [0, 0, *range(1, stock.wakes + 1)]
    assert {f.verdict for f in record.fingerprints if f.wake > 0} == {"match"}
    assert all(s.level == 1 and s.warmup_waves in (0, 1) for s in record.swaps)
    assert check_interleaving(rd, plan).problems == []
    [entry] = integrity(server_records(rd, plan), plan)
    assert entry.method == "interleaved" and entry.wakes_checked == entry.wakes_matched > 0
    assert interleave.resumed_fallback(plan, ("cand", "base"), rd) == {}  # a resume interleaves it again
    # the wake checks are their own time, not idle
    log = read_phases(rd)
    assert log is not None
    wakes = stock.wakes + cand.wakes
    assert sum(p.kind == "wake-check" for p in log.phases) == sum(p.kind == "swap" for p in log.phases) == wakes
    spent = time_to_verdict(rd, plan)
    phases = phase_time(rd)
    assert spent is not None and phases is not None
    assert spent.run.checking_s > 0 and phases.check_s > 0
    # the same records without their wake-check spans: that time was idle before it had a kind of its own
    for name in ("base", "cand"):
        path = rd.server_record(name)
        data = read_json(path)
        data["activity"] = [s for s in data["activity"] if s["kind"] != "wake-check"]
        write_record(path, data)
    before = time_to_verdict(rd, plan)
    assert before is not None and before.run.checking_s == 0
    assert before.run.wall_s == pytest.approx(spent.run.wall_s)
    assert before.run.idle_s == pytest.approx(spent.run.idle_s + spent.run.checking_s, abs=1e-6)


def test_a_server_whose_outputs_change_after_a_wake_invalidates_the_right_points(tmp_path: Path) -> None:
    from byog.analysis.interleave_records import check_interleaving

    stock, cand = FakeVllm(sleep_mode=True, changes_after_wake=3), FakeVllm(sleep_mode=True)
    try:
        rd, plan, pair, failure = _checked_sweep(tmp_path, stock, cand)
        assert failure is not None and str(failure).startswith("wake integrity: outputs changed after wake 3")
        first, second = [p.point_id for p in expand_plan(plan) if p.kind == "batch"]
        # base's wake 3 woke it in the first point's visit 7; wake 2 (visit 3) was its last good check, so
        # the first point's rows since then cannot stand: it was never written and runs again sequentially
        assert not rd.bench_point_complete("base", first)
        kept = interleave._fall_back(pair, rd, str(failure))
    finally:
        stock.close()
        cand.close()
    record = ServerRecord.model_validate(read_json(rd.server_record("base"))).sleep_mode
    assert record is not None and record.fallback_points == [first, second]
    assert kept["base"]["fallback_points"] == [first, second]
    assert [f.verdict for f in record.fingerprints if f.batch == 1][-1] == "changed"
    assert check_interleaving(rd, plan).problems == []  # nothing interleaved is left at the invalid points


def test_a_drafter_lost_on_wake_invalidates_with_outputs_unchanged(tmp_path: Path) -> None:
    stock, cand = FakeVllm(sleep_mode=True), FakeVllm(sleep_mode=True, acceptance=(5.9, 1.0, 2))
    try:
        _, _, _, failure = _checked_sweep(tmp_path, stock, cand)
    finally:
        stock.close()
        cand.close()
    assert failure is not None
    assert str(failure).startswith("acceptance 5.9 → 1.0 after wake 2: drafter not restored")


def test_points_completed_before_a_failed_wake_are_moved_aside_when_measured_since_the_last_good_check(
    tmp_path: Path,
) -> None:
    stock, cand = FakeVllm(sleep_mode=True, changes_after_wake=4), FakeVllm(sleep_mode=True)
    try:
        rd, plan, pair, failure = _checked_sweep(tmp_path, stock, cand)
        first, second = [p.point_id for p in expand_plan(plan) if p.kind == "batch"]
        # base wakes before visits 0, 3 and 7 of the first point (ABBAABBA), stays up for the second's
        # visit 0, and its wake 4 comes before that point's visit 3
        assert failure is not None and "after wake 4" in str(failure)
        assert rd.bench_point_complete("base", first)
        interleave._fall_back(pair, rd, str(failure))
    finally:
        stock.close()
        cand.close()
    # the first point's visit 7 came after wake 3, the last good one: both sides' records of it go aside
    assert not rd.bench_point_complete("base", first) and not rd.bench_point_complete("cand", first)
    assert list((rd.root / ".superseded").glob(f"wake-integrity-*/bench/base/{first}.json"))


def _failed_at_wake_3(folder: Path) -> tuple[RunDir, Plan, interleave.Pair, WakeIntegrityFailure]:
    stock, cand = FakeVllm(sleep_mode=True, changes_after_wake=3), FakeVllm(sleep_mode=True)
    try:
        rd, plan, pair, failure = _checked_sweep(folder, stock, cand)
    finally:
        stock.close()
        cand.close()
    assert failure is not None
    return rd, plan, pair, failure


def _resumed_measure(rd: RunDir, plan: Plan, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """byog run's measuring step on ``rd`` as a resume runs it: the servers it starts sequentially (a fresh
    start rewrites server.json, as a real one does); starting the pair interleaved again fails the test."""
    from byog.pipeline import run as run_module

    started: list[str] = []

    def sequential(plan: Plan, name: str, model: Any, launch_dir: RunDir, *rest: Any) -> None:
        started.append(name)
        write_server_record(launch_dir.server_record(name), ServerRecord(name=name))

    def interleaved_again(*args: Any) -> None:
        raise AssertionError("the pair was started interleaved again after a wake failed its check")

    monkeypatch.setattr(run_module, "run_interleaved_pair", interleaved_again)
    monkeypatch.setattr(run_module, "run_server", sequential)
    monkeypatch.setattr(run_module, "prepare_model", lambda spec: None)
    monkeypatch.setattr(run_module, "resolve_control", lambda plan, env: plan)
    rd.env_json.write_text(json.dumps({}))
    run_module._measure(plan, rd, None, NullReporter())
    return started


def test_a_resume_after_a_failed_wake_goes_on_sequentially_even_if_the_stop_came_before_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rd, plan, _, failure = _failed_at_wake_3(tmp_path)
    # stopped right after the failed check was recorded, before the fallback: the verdict is recomputed
    assert ServerRecord.model_validate(read_json(rd.server_record("base"))).sleep_mode.fallback_reason is None  # type: ignore[union-attr]
    assert sorted(_resumed_measure(rd, plan, monkeypatch)) == ["base", "cand"]
    first, second = [p.point_id for p in expand_plan(plan) if p.kind == "batch"]
    for name in ("base", "cand"):
        record = ServerRecord.model_validate(read_json(rd.server_record(name))).sleep_mode
        assert record is not None and record.fallback_reason == str(failure)
        assert record.fallback_points == [first, second]
    assert [
        f.verdict for f in ServerRecord.model_validate(read_json(rd.server_record("base"))).sleep_mode.fingerprints
    ][-1] == "changed"  # type: ignore[union-attr]


def test_a_run_stopped_during_the_sequential_fallback_resumes_sequentially_with_its_fingerprints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rd, plan, pair, failure = _failed_at_wake_3(tmp_path)
    interleave._fall_back(pair, rd, str(failure))
    fingerprints = read_json(rd.server_record("base"))["sleep_mode"]["fingerprints"]
    # base's sequential start rewrote its server.json, then the run stopped
    write_server_record(rd.server_record("base"), ServerRecord(name="base"))
    assert sorted(_resumed_measure(rd, plan, monkeypatch)) == ["base", "cand"]
    for name in ("base", "cand"):
        record = read_json(rd.server_record(name))["sleep_mode"]
        assert record["fallback_reason"] == str(failure)
    assert read_json(rd.server_record("base"))["sleep_mode"]["fingerprints"] == fingerprints
