"""Two servers on declared disjoint GPUs run their evals at once (lm-eval through byog's adapter,
against two loopback fakes), record that choice, and resume after an interrupt; servers that share
or do not declare GPUs run one at a time, as before."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from byog.analysis.phases import eval_order_problems, phase_problems, read_phases
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


def _measure(rd: RunDir, reporter: RecordingReporter) -> None:
    plan = _plan()
    rd.root.mkdir(parents=True, exist_ok=True)
    rd.plan_yaml.write_text(PLAN)
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
