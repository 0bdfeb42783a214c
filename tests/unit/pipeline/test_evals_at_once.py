"""Two servers on declared disjoint GPUs run their evals at once (lm-eval through byog's adapter,
against two loopback fakes), record that choice, and resume after an interrupt; servers that share
or do not declare GPUs run one at a time, as before. A task with looks runs in the same looks on
both: they stop together where the gate stops, run every look where it never does, and a partner
killed mid-way lets the other run every item."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from byog.analysis.eval_summary import summarize_evals
from byog.analysis.phases import eval_order_problems, phase_problems, read_phases
from byog.core.errors import ByogError
from byog.core.paths import RunDir
from byog.core.reporter import Status
from byog.pipeline import launch
from byog.pipeline import run as run_module
from byog.pipeline.evals_at_once import AtOnce, with_evals_at_once
from byog.pipeline.interleave import interleaved_rounds
from byog.plans.load import parse_plan
from byog.runtimes.record import utc_now, write_server_record
from byog.schemas.plan import Plan, ServerConfig
from byog.schemas.server import PreparedModel, ServerRecord
from tests.support.eval_records import eval_results, sequential_record
from tests.support.fake_vllm import FakeVllm
from tests.support.interleave_run import FakeServer
from tests.support.reporter import RecordingReporter

PLAN = """\
name: at-once
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  cand: {env: {CUDA_VISIBLE_DEVICES: "1"}}
  stock: {args: [--enforce-eager], env: {CUDA_VISIBLE_DEVICES: "0"}}
baseline: stock
evals:
  - {task: arithmetic_generated, limit: 6, passes: 1}
"""
NO_GPU = {"available": False, "reason": "no NVML here"}


def _plan(text: str = PLAN) -> Plan:
    return parse_plan(text, "plan.yaml")


def _steps(plan: Plan) -> list[Any]:
    steps, _ = with_evals_at_once(plan, interleaved_rounds(plan, run_module.launch_rounds(plan)), NO_GPU)
    return [name for _, name in steps]


def test_disjoint_declared_gpus_make_one_step_and_anything_else_keeps_the_order() -> None:
    assert _steps(_plan()) == [
        AtOnce(
            ("cand", "stock"), "each on GPUs of its own: 'cand' CUDA_VISIBLE_DEVICES=1, 'stock' CUDA_VISIBLE_DEVICES=0"
        )
    ]
    assert _steps(_plan(PLAN.replace('CUDA_VISIBLE_DEVICES: "1"', 'CUDA_VISIBLE_DEVICES: "0"'))) == ["cand", "stock"]
    assert _steps(_plan(PLAN.replace('cand: {env: {CUDA_VISIBLE_DEVICES: "1"}}', "cand: {}"))) == ["cand", "stock"]
    # a server without evals is not held up for another's
    only_stock = PLAN.replace("arithmetic_generated, limit: 6", "arithmetic_generated, servers: [stock], limit: 6")
    assert _steps(_plan(only_stock)) == ["cand", "stock"]


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, FakeVllm]]:
    made = {"stock": FakeVllm(), "cand": FakeVllm()}

    class Runtime:
        def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> Any:
            record: dict[str, Any] = {"name": name, "starts": [{"started_at": utc_now(), "ready_after_s": 1.0}]}
            seen = getattr(made[name], "uuid", None)  # a test's NVML answer at the start: this card
            if seen:
                record["hardware"] = {"gpus": [{"index": 0, "uuid": seen}]}
            write_server_record(server_dir / "server.json", ServerRecord.model_validate(record))
            return FakeServer(name, made[name])

    monkeypatch.setattr(launch, "runtime_for", lambda config: Runtime())
    model = PreparedModel(path="m", served_name="fake", tokenizer="m")
    monkeypatch.setattr(run_module, "prepare_model", lambda _: model)
    monkeypatch.setattr(run_module, "environment_fingerprint", lambda: {"gpu": NO_GPU})
    yield made
    for fake in made.values():
        fake.close()


def _measure(rd: RunDir, reporter: RecordingReporter, text: str = PLAN) -> None:
    plan = _plan(text)
    rd.root.mkdir(parents=True, exist_ok=True)
    rd.plan_yaml.write_text(text)
    run_module._measure(plan, rd, None, reporter)


class InterruptOnFirstWord(RecordingReporter):
    """Ctrl-C as soon as an eval process first says what it is doing: neither has finished then."""

    @contextmanager
    def status(self, text: str, *, lead: str = "") -> Iterator[Status]:
        self.statuses.append(lead + text)
        yield self

    def update(self, text: str, *, lead: str = "") -> None:
        self.statuses.append(lead + text)
        if "eval arithmetic_generated on" in text:
            raise KeyboardInterrupt


def test_two_servers_on_their_own_gpus_run_their_evals_at_once_and_resume(
    fakes: dict[str, FakeVllm], tmp_path: Path
) -> None:
    rd = RunDir(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        _measure(rd, InterruptOnFirstWord())
    assert not any(rd.eval_complete(name, "arithmetic_generated") for name in fakes)
    reporter = RecordingReporter()
    _measure(rd, reporter)
    assert reporter.lines[0] == (
        "evals of cand and stock at once: each on GPUs of its own: 'cand' CUDA_VISIBLE_DEVICES=1, "
        "'stock' CUDA_VISIBLE_DEVICES=0"
    )
    for name, fake in fakes.items():
        rows = pq.read_table(rd.eval_items(name, "arithmetic_generated")).to_pylist()
        assert len(rows) == 6 and len({(r["item_id"], r["pass_index"]) for r in rows}) == 6  # no item twice
        assert any(r.get("messages") for r in fake.requests)  # lm-eval asked this server
    log = read_phases(rd)
    assert log is not None
    evals = [p for p in log.phases if p.kind == "eval"]
    assert [p.server for p in evals[2:]] and {p.server for p in evals[2:]} == {"cand", "stock"}
    for first, second in (evals[:2], evals[2:]):  # the interrupted attempt and the resumed one
        assert first.t0_unix_s < second.t1_unix_s and second.t0_unix_s < first.t1_unix_s  # they overlap
    starts = [p for p in log.phases if p.kind == "start"]
    assert max(p.t1_unix_s for p in starts[-2:]) <= min(p.t0_unix_s for p in evals[2:])  # both up first
    assert [(o.servers, o.together) for o in log.eval_order] == [(["cand", "stock"], True)]
    assert phase_problems(log) == [] and eval_order_problems(log, _plan(), NO_GPU, {}) == []
    assert any("eval arithmetic_generated on stock: 0.0 points over 6 items" in line for line in reporter.lines)


def test_servers_that_saw_one_card_at_their_start_are_evaluated_one_at_a_time_after_all(
    fakes: dict[str, FakeVllm], tmp_path: Path
) -> None:
    """The plan's sets are disjoint, but what NVML reported at each start names one card behind both."""
    for fake in fakes.values():
        fake.uuid = "GPU-5e1f"  # type: ignore[attr-defined]
    rd = RunDir(tmp_path / "run")
    reporter = RecordingReporter()
    _measure(rd, reporter)
    after_all = "evals of cand and stock one server at a time after all: 'cand' and 'stock' both saw GPU GPU-5e1f"
    assert any(line.startswith(after_all) for line in reporter.lines)
    log = read_phases(rd)
    assert log is not None and phase_problems(log) == []
    cand, stock = (p for p in log.phases if p.kind == "eval")
    assert cand.t1_unix_s <= stock.t0_unix_s  # one after the other
    assert [(o.servers, o.together) for o in log.eval_order] == [(["cand", "stock"], False)]
    assert all(rd.eval_complete(name, "arithmetic_generated") for name in fakes)


# --- looks: both servers in the same looks ---------------------------------------------------------

TASK = "arithmetic_generated"


def _looks_plan_text(margin: float) -> str:
    """20 items in looks of 10 and 20. Both fakes answer alike: at a 40-point margin 10 paired items prove
    equivalence at look 1; at 1 point no look decides."""
    looks = f"  - {{task: {TASK}, limit: 20, passes: 1, margin: {margin}, looks: [0.5, 1.0]}}\n"
    return PLAN.replace(f"  - {{task: {TASK}, limit: 6, passes: 1}}\n", looks)


def _sequential(rd: RunDir, server: str) -> dict[str, Any]:
    return sequential_record(rd, server, TASK)


def _asked(fake: FakeVllm) -> list[str]:
    """The prompts lm-eval sent this server."""
    return [r["messages"][-1]["content"] for r in fake.requests if r.get("messages")]


def test_two_servers_at_once_stop_together_at_the_look_where_the_gate_stops(
    fakes: dict[str, FakeVllm], tmp_path: Path
) -> None:
    rd = RunDir(tmp_path / "run")
    reporter = RecordingReporter()
    text = _looks_plan_text(40.0)
    _measure(rd, reporter, text)
    assert len(_asked(fakes["cand"])) == 10 and sorted(_asked(fakes["cand"])) == sorted(_asked(fakes["stock"]))
    for name, other in (("cand", "stock"), ("stock", "cand")):
        assert _sequential(rd, name) == {
            "planned_items": 20,
            "looks_run": 1,
            "items_run": 10,
            "stopped": True,
            "lockstep_with": other,
        }
        assert any(
            line.startswith(f"eval {TASK} on {name}: ")
            and line.endswith(
                f"stopped at look 1 (in the same looks as {other}, evaluated at once): items run / planned 10 / 20"
            )
            for line in reporter.lines
        )
    verdict = summarize_evals(rd, _plan(text)).verdicts[0]
    assert verdict.sequential is not None
    assert (verdict.sequential.decision, verdict.sequential.items_used) == ("equivalent", 10)


def test_two_servers_at_once_whose_gate_never_stops_run_every_look(fakes: dict[str, FakeVllm], tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "run")
    _measure(rd, RecordingReporter(), _looks_plan_text(1.0))
    for name, fake in fakes.items():
        assert len(_asked(fake)) == 20
        record = _sequential(rd, name)
        assert (record["looks_run"], record["items_run"], record["stopped"]) == (2, 20, False)


@pytest.mark.timeout(300)  # a waiting side that never learns of its partner's end would wait for ever
def test_a_partner_killed_mid_way_lets_the_other_finish_every_item(fakes: dict[str, FakeVllm], tmp_path: Path) -> None:
    """cand's eval process is killed (as the OOM killer would) when its look 2 reaches its server."""
    cand = fakes["cand"]
    answer, lock, killed = cand.chat, threading.Lock(), []

    def chat(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            if len(_asked(cand)) > 10 and not killed:
                (proc,) = [p for p in multiprocessing.active_children() if p.name == "byog-evals-cand"]
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc.pid)
        return answer(body)

    cand.chat = chat  # type: ignore[method-assign]
    rd = RunDir(tmp_path / "run")
    reporter = RecordingReporter()
    with pytest.raises(ByogError, match="the eval process of cand exited with code -9 and no word"):
        _measure(rd, reporter, _looks_plan_text(1.0))
    assert killed and not rd.eval_complete("cand", TASK)
    why = "every item ran: the evals of cand, run at once in the same looks, ended before its look 2"
    assert _sequential(rd, "stock") == {
        "planned_items": 20,
        "looks_run": 1,
        "items_run": 20,
        "stopped": False,
        "lockstep_with": "cand",
        "why": why,
    }
    assert any(line.startswith(f"eval {TASK} on stock: ") and line.endswith(f"({why})") for line in reporter.lines)


class InterruptAfterBothLook1(RecordingReporter):
    """Ctrl-C once both eval processes have judged their look 1: both looks are on disk then."""

    @contextmanager
    def status(self, text: str, *, lead: str = "") -> Iterator[Status]:
        yield self

    def update(self, text: str, *, lead: str = "") -> None:
        self.statuses.append(text)
        if all(
            any(f"eval on {name}: {TASK}: look 1/2" in said for said in self.statuses) for name in ("cand", "stock")
        ):
            raise KeyboardInterrupt


def test_a_rerun_of_two_servers_at_once_reads_their_looks_back(fakes: dict[str, FakeVllm], tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "run")
    text = _looks_plan_text(1.0)
    with pytest.raises(KeyboardInterrupt):
        _measure(rd, InterruptAfterBothLook1(), text)
    first = {name: set(_asked(fake)) for name, fake in fakes.items()}
    assert all(len(asked) >= 10 for asked in first.values())
    for fake in fakes.values():
        fake.requests.clear()
    _measure(rd, RecordingReporter(), text)
    for name, fake in fakes.items():
        assert len(json.loads(rd.eval_look(name, TASK, 1).read_text())["rows"]) == 10
        assert len(set(_asked(fake)) | first[name]) == 20  # every item asked once or more
        assert len(_asked(fake)) <= 10  # look 1 (and a look 2 saved before the interrupt) read back, not asked
        record = _sequential(rd, name)
        assert (record["looks_run"], record["items_run"], record["stopped"]) == (2, 20, False)
        # the interrupted attempt's seconds on the looks read back count in the task's wall
        assert 0 < record["read_back_wall_s"] <= eval_results(rd, name, TASK)["wall_s"]
