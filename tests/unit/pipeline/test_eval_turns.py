"""An interleaved pair's evals in turns on its one GPU (two loopback fakes with vLLM's sleep endpoints,
lm-eval through byog's adapter): both sides run in the same looks and stop where the paired gate
does, no request reaches the sleeping side, and each turn is an eval span of its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from byog.analysis.eval_summary import summarize_evals
from byog.analysis.phases import phase_problems, read_phases
from byog.core.paths import RunDir
from byog.pipeline import interleave, launch
from byog.plans.load import parse_plan
from byog.runtimes.record import utc_now, write_server_record
from byog.schemas.plan import Plan, ServerConfig
from byog.schemas.server import PreparedModel, ServerRecord
from tests.support.eval_records import eval_results, sequential_record
from tests.support.fake_vllm import FakeVllm
from tests.support.interleave_run import FakeServer
from tests.support.reporter import RecordingReporter

TASK = "arithmetic_generated"
PLAN = """\
name: turns
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  cand: {}
  stock: {args: [--enforce-eager]}
baseline: stock
pairs: [{candidate: cand, baseline: stock, interleave: true}]
workloads:
  - {kind: batch, isl: [16], osl: [8], batch_sizes: [1], warmup_waves: 1, waves: 2}
evals:
  - {task: arithmetic_generated, limit: 20, passes: 1, margin: MARGIN, looks: [0.5, 1.0]}
"""


def _plan(margin: float) -> Plan:
    """20 items in looks of 10 and 20. Both fakes answer alike: at a 40-point margin 10 paired items prove
    equivalence at look 1; at 1 point no look decides."""
    return parse_plan(PLAN.replace("MARGIN", str(margin)), "plan.yaml")


class AwakeFake(FakeVllm):
    """A sleep-mode fake that counts the eval requests it got asleep (its handler refuses them, 503)."""

    def __init__(self) -> None:
        super().__init__(sleep_mode=True)
        fake = self

        class Seen(list[dict[str, Any]]):
            def append(self, body: dict[str, Any]) -> None:
                fake.asked_asleep += bool(fake.sleeping and body.get("messages"))
                super().append(body)

        self.asked_asleep = 0
        self.requests = Seen()

    def asked(self) -> int:
        return sum(1 for r in self.requests if r.get("messages"))


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, AwakeFake]]:
    made = {"stock": AwakeFake(), "cand": AwakeFake()}

    class Runtime:
        def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> Any:
            record = {"name": name, "starts": [{"started_at": utc_now(), "ready_after_s": 2.0}]}
            write_server_record(server_dir / "server.json", ServerRecord.model_validate(record))
            return FakeServer(name, made[name])

    monkeypatch.setattr(launch, "runtime_for", lambda config: Runtime())
    monkeypatch.setattr(interleave, "bench_pair", lambda *_: None)  # the evals are what is tested
    yield made
    for fake in made.values():
        fake.close()


def _run(plan: Plan, rd: RunDir, reporter: RecordingReporter) -> None:
    rd.root.mkdir(parents=True, exist_ok=True)
    rd.plan_yaml.write_text(plan.model_dump_json())
    model = PreparedModel(path="m", served_name="fake", tokenizer="m")
    assert interleave.run_interleaved_pair(plan, ("cand", "stock"), model, rd, None, reporter) == {}


def _sequential(rd: RunDir, server: str) -> dict[str, Any]:
    return sequential_record(rd, server, TASK)


def _look_wall_s(rd: RunDir, server: str, look: int) -> float:
    return float(json.loads(rd.eval_look(server, TASK, look).read_text())["wall_s"])


def _wall_s(rd: RunDir, server: str) -> float:
    return float(eval_results(rd, server, TASK)["wall_s"])


def _wakes(fake: FakeVllm) -> int:
    return fake.calls.count("wake_up")


def test_both_sides_stop_at_the_look_where_the_gate_stops_and_neither_is_asked_asleep(
    fakes: dict[str, AwakeFake], tmp_path: Path
) -> None:
    rd, reporter = RunDir(tmp_path / "run"), RecordingReporter()
    plan = _plan(40.0)
    _run(plan, rd, reporter)
    for name, other in (("cand", "stock"), ("stock", "cand")):
        fake = fakes[name]
        assert (fake.asked(), fake.asked_asleep) == (10, 0)  # look 1 only, on both sides; none while asleep
        record = _sequential(rd, name)
        # stock ran its look 1 in its first turn and read it back in its second: both turns are its wall
        assert record.pop("read_back_wall_s", None) == (_look_wall_s(rd, "stock", 1) if name == "stock" else None)
        assert record == {
            "planned_items": 20,
            "looks_run": 1,
            "items_run": 10,
            "stopped": True,
            "lockstep_with": other,
            "in_turns": True,
        }
        assert any(
            line.startswith(f"eval {TASK} on {name}: ")
            and line.endswith(
                f"stopped at look 1 (in the same looks as {other}, in turns on one GPU): items run / planned 10 / 20"
            )
            for line in reporter.lines
        )
    # stock's look 1, then cand's (which stops there), then stock's again to judge its look 1
    assert f"stock: {TASK} look 1 done; cand's turn (the same looks, in turns on one GPU)" in reporter.lines
    verdict = summarize_evals(rd, plan).verdicts[0]
    assert verdict.sequential is not None
    assert (verdict.sequential.decision, verdict.sequential.items_used) == ("equivalent", 10)
    log = read_phases(rd)
    assert log is not None and phase_problems(log) == []  # turns and swaps, one after the other
    turns = [(p.server, p.kind) for p in log.phases if p.kind in ("eval", "swap")]
    assert [t for t in turns if t[1] == "eval"] == [("stock", "eval"), ("cand", "eval"), ("stock", "eval")]


def test_a_gate_that_never_stops_runs_every_look_on_both_in_alternating_turns(
    fakes: dict[str, AwakeFake], tmp_path: Path
) -> None:
    rd = RunDir(tmp_path / "run")
    before = {name: _wakes(fake) for name, fake in fakes.items()}
    _run(_plan(1.0), rd, RecordingReporter())
    for name, fake in fakes.items():
        assert (fake.asked(), fake.asked_asleep) == (20, 0)
        record = _sequential(rd, name)
        assert (record["looks_run"], record["items_run"], record["stopped"], record["in_turns"]) == (2, 20, False, True)
    # stock: look 1 | cand: looks 1 and 2 | stock: look 2, complete | cand: reads both back, complete
    assert {name: _wakes(fake) - before[name] for name, fake in fakes.items()} == {"stock": 2, "cand": 2}
    # each side's wall counts every turn it spent on the task, not only its last call's
    looks = {name: [_look_wall_s(rd, name, k) for k in (1, 2)] for name in fakes}
    assert _sequential(rd, "cand")["read_back_wall_s"] == pytest.approx(sum(looks["cand"]), abs=2e-3)
    assert _sequential(rd, "stock")["read_back_wall_s"] == pytest.approx(looks["stock"][0], abs=2e-3)
    assert all(_wall_s(rd, name) >= sum(looks[name]) - 2e-3 for name in fakes)
