"""Two servers evaluated at once run a task with looks in the same looks: each waits at a look for the
other's items of it on disk, both stop where the paired gate stops, a partner that ended lets the other
run every item, and a rerun reads its looks back (the two sides in threads, lm-eval faked per item)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from byog.analysis import group_sequential
from byog.analysis.eval_summary import summarize_evals
from byog.core.paths import RunDir
from byog.evals import runner
from byog.evals.lockstep import Partner
from byog.schemas.plan import Plan
from byog.schemas.server import Endpoint
from tests.support.eval_records import sequential_record
from tests.support.reporter import RecordingReporter
from tests.unit.evals.test_runner import FakeLmEval, _looks_plan, _mixed

TASK = "arithmetic_generated"
SERVERS = ("baseline", "candidate")


def _fakes(monkeypatch: pytest.MonkeyPatch, scores: dict[str, Callable[[int], float]]) -> dict[str, FakeLmEval]:
    fakes = {server: FakeLmEval(score) for server, score in scores.items()}
    monkeypatch.setattr(runner, "run_pass", lambda t, s, e, **kw: fakes[e.model](t, s, e, **kw))
    return fakes


def _at_once(rd: RunDir, servers: tuple[str, ...] = SERVERS, plan: Plan | None = None) -> dict[str, RecordingReporter]:
    """Each server's evals in a thread of its own, partnered with the other; a side's failure is re-raised."""
    ended = {server: threading.Event() for server in SERVERS}
    reporters = {server: RecordingReporter() for server in servers}
    failed: list[BaseException] = []

    def evaluate(server: str) -> None:
        other = SERVERS[1 - SERVERS.index(server)]
        endpoint = Endpoint(base_url="http://127.0.0.1:1", model=server, max_model_len=4096)
        try:
            partner = Partner(other, ended[other].is_set)
            runner.run_evals_for_server(plan or _looks_plan(), server, endpoint, rd, None, reporters[server], partner)
        except BaseException as err:
            failed.append(err)
        finally:
            ended[server].set()

    for server in SERVERS:
        if server not in servers:
            ended[server].set()  # a partner whose process is gone before it wrote anything
    threads = [threading.Thread(target=evaluate, args=(server,)) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    if failed:
        raise failed[0]
    return reporters


def _record(rd: RunDir, server: str) -> dict[str, Any]:
    return sequential_record(rd, server, TASK)


def test_both_stop_at_the_look_where_the_gate_on_the_same_items_stops(tmp_path: Path, monkeypatch) -> None:
    rd = RunDir(tmp_path)
    fakes = _fakes(monkeypatch, {"baseline": _mixed, "candidate": _mixed})
    reporters = _at_once(rd)
    look_1 = fakes["baseline"].calls
    assert [len(c) for c in look_1] == [100] and fakes["candidate"].calls == look_1  # the same items
    for server in SERVERS:
        other = SERVERS[1 - SERVERS.index(server)]
        record = _record(rd, server)
        assert record == {
            "planned_items": 200,
            "looks_run": 1,
            "items_run": 100,
            "stopped": True,
            "lockstep_with": other,
        }
        assert (
            f"stopped at look 1 (in the same looks as {other}, evaluated at once): items run / planned 100 / 200"
            in "\n".join(reporters[server].lines)
        )
    verdict = summarize_evals(rd, _looks_plan()).verdicts[0]
    assert verdict.sequential is not None
    assert (verdict.sequential.decision, verdict.sequential.items_used) == ("equivalent", 100)
    assert not group_sequential.missing_items(verdict.sequential)


def _differs(d: int) -> float:
    return _mixed(d) if d % 10 else 1 - _mixed(d)  # 10% discordant: neither look decides


def test_a_gate_that_does_not_stop_runs_every_look_on_both(tmp_path: Path, monkeypatch) -> None:
    rd = RunDir(tmp_path)
    fakes = _fakes(monkeypatch, {"baseline": _mixed, "candidate": _differs})
    _at_once(rd)
    for server in SERVERS:
        assert [len(c) for c in fakes[server].calls] == [100, 100]
        assert _record(rd, server)["stopped"] is False and _record(rd, server)["looks_run"] == 2
    verdict = summarize_evals(rd, _looks_plan()).verdicts[0]
    assert verdict.sequential is not None and [look.items for look in verdict.sequential.looks] == [100, 200]


def test_a_partner_that_ended_before_a_look_lets_the_other_run_every_item(tmp_path: Path, monkeypatch) -> None:
    rd = RunDir(tmp_path)
    fakes = _fakes(monkeypatch, {"baseline": _mixed, "candidate": _mixed})
    reporters = _at_once(rd, ("baseline",))  # the candidate's process ended without a look on disk
    assert [len(c) for c in fakes["baseline"].calls] == [100, 100]
    why = "every item ran: the evals of candidate, run at once in the same looks, ended before its look 1"
    assert _record(rd, "baseline") == {
        "planned_items": 200,
        "looks_run": 0,
        "items_run": 200,
        "stopped": False,
        "lockstep_with": "candidate",
        "why": why,
    }
    assert f"items run / planned 200 / 200 ({why})" in "\n".join(reporters["baseline"].lines)


def test_a_rerun_reads_the_looks_on_disk_back(tmp_path: Path, monkeypatch) -> None:
    rd = RunDir(tmp_path)
    fakes = _fakes(monkeypatch, {"baseline": _mixed, "candidate": _differs})

    def second_look_fails(t: Any, s: Any, e: Endpoint, **kw: Any) -> Any:
        if fakes[e.model].calls:
            raise KeyboardInterrupt
        return fakes[e.model](t, s, e, **kw)

    monkeypatch.setattr(runner, "run_pass", second_look_fails)
    with pytest.raises(KeyboardInterrupt):
        _at_once(rd)
    assert not any(rd.eval_complete(server, TASK) for server in SERVERS)
    first = {server: fakes[server].calls[0] for server in SERVERS}
    fakes = _fakes(monkeypatch, {"baseline": _mixed, "candidate": _differs})
    _at_once(rd)
    for server in SERVERS:
        assert len(fakes[server].calls) == 1 and not set(fakes[server].calls[0]) & set(first[server])  # look 2 only
        assert _record(rd, server)["looks_run"] == 2
    verdict = summarize_evals(rd, _looks_plan()).verdicts[0]
    assert verdict.sequential is not None and [look.items for look in verdict.sequential.looks] == [100, 200]


def test_a_server_in_another_pair_too_stops_only_when_every_pair_has_stopped(tmp_path: Path, monkeypatch) -> None:
    """merge ran before (every item) and differs from the baseline; the candidate, at once with the
    baseline, is alike: the candidate stops at look 1, the baseline runs on for its pair with merge."""
    three = _looks_plan().model_dump()
    three["servers"]["merge"] = {"args": ["--max-num-seqs", "8"]}
    plan = Plan.model_validate(three)
    rd = RunDir(tmp_path)
    fakes = _fakes(monkeypatch, {"merge": _differs, "baseline": _mixed, "candidate": _mixed})
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="merge", max_model_len=4096)
    runner.run_evals_for_server(plan, "merge", endpoint, rd, None, RecordingReporter())
    assert [len(c) for c in fakes["merge"].calls] == [200]  # nothing to pair with yet
    _at_once(rd, plan=plan)
    assert [len(c) for c in fakes["candidate"].calls] == [100]
    assert [len(c) for c in fakes["baseline"].calls] == [100, 100]
    assert _record(rd, "candidate")["stopped"] is True and _record(rd, "candidate")["looks_run"] == 1
    assert _record(rd, "baseline")["stopped"] is False and _record(rd, "baseline")["looks_run"] == 2
    decisions = {v.candidate: v.sequential.decision for v in summarize_evals(rd, plan).verdicts if v.sequential}
    assert decisions == {"candidate": "equivalent", "merge": "inconclusive"}
