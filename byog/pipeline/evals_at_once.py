"""Two servers' evals at once, where each runs on GPUs of its own (``byog.analysis.gpu_sets``).

``with_evals_at_once`` turns the launch order into the order the run takes: two servers of launch 1
that launch one after the other, both with evals, and whose declared GPU sets are disjoint become
one ``AtOnce`` step; every other server runs as before, one at a time. Each choice, and why, goes
into phases.json (``eval_order``), which lets those two servers' eval phases overlap there.

``run_evals_at_once`` runs each server's evals (``byog.evals.runner.run_evals_for_server``: the same
records, the same skip of a complete task, so a rerun resumes both) in a process of its own: lm-eval
keeps state per process (its seeding of the global RNGs, the redirected stderr around it) that two
evaluations in one process would share. A task with looks that compares the two runs in the same
looks on both (``byog.evals.lockstep``: each waits at a look for the other's items of it); the run
tells each process when its partner's has ended, so neither waits for a partner that is gone. What
each says comes back through a queue to the one reporter; each eval phase is recorded when its
process ends.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import signal
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from byog.analysis.gpu_sets import Choice, cards_seen, eval_order, shared_cards
from byog.core.errors import ByogError
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.core.reporter import ProgressBoard, Reporter, Status, Style, Table
from byog.evals.lockstep import Partner
from byog.evals.runner import run_evals_for_server
from byog.pipeline.activity import add_eval_order, add_span, spent
from byog.schemas.phases import Instant, now
from byog.schemas.plan import Plan
from byog.schemas.server import Endpoint

STOP_GRACE_S = 10.0  # an interrupted eval process's time to clean up (lm-eval's temporary task folder)


@dataclass(frozen=True)
class AtOnce:
    """Two servers up together, their evals at once."""

    servers: tuple[str, str]
    why: str


Step = str | tuple[str, str] | AtOnce  # a server, an interleaved pair, or two servers evaluated at once


def with_evals_at_once(
    plan: Plan, rounds: list[tuple[int, Any]], gpu: dict[str, Any] | None
) -> tuple[list[tuple[int, Step]], list[Choice]]:
    """``rounds`` (launch, server or interleaved pair) with each pair of launch-1 neighbours that can
    run their evals at once made one step; and every choice made, at once or not, with why."""
    has_evals = {name for spec in plan.evals for name in plan.servers_for(spec)}
    out: list[tuple[int, Step]] = []
    choices: list[Choice] = []
    i = 0
    while i < len(rounds):
        j = i
        while j < len(rounds) and rounds[j][0] == 1 and isinstance(rounds[j][1], str) and rounds[j][1] in has_evals:
            j += 1
        if j == i:
            out.append(rounds[i])
            i += 1
            continue
        names = [name for _, name in rounds[i:j]]
        made = eval_order(plan, names, gpu)
        choices += made
        together = {c.servers[0]: c for c in made if c.together}
        k = 0
        while k < len(names):
            choice = together.get(names[k])
            if choice is not None:
                out.append((1, AtOnce(choice.servers, choice.why)))
                k += 2
            else:
                out.append((1, names[k]))
                k += 1
        i = j
    return out, choices


def say_eval_order(rd: RunDir, choices: list[Choice], reporter: Reporter) -> None:
    """Say each choice in one line; record those of one server at a time in phases.json (a pair at once
    is recorded when its evals start: ``run_evals_at_once``)."""
    add_eval_order(rd, [c for c in choices if not c.together])
    for c in choices:
        pair = " and ".join(c.servers)
        if c.together:
            reporter.line(f"evals of {pair} at once: {c.why}")
        else:
            reporter.line(f"evals of {pair} one server at a time: {c.why}")


@dataclass(frozen=True)
class EvalWall:
    """The evals' part of a plan's wall time in the run's order, and the assumption line that says how."""

    total_s: float  # every item
    expected_s: float  # at the expected items where looks may stop an eval
    said: str | None  # None: no two servers with evals launch one after the other


def at_once_pairs(steps: list[tuple[int, Step]]) -> list[tuple[str, str]]:
    """The pairs of servers whose evals run at once, in the run's order."""
    return [step.servers for _, step in steps if isinstance(step, AtOnce)]


def eval_wall(
    steps: list[tuple[int, Step]], choices: list[Choice], full: dict[str, float], expected: dict[str, float]
) -> EvalWall:
    """Each server's evals (``full``: every item, ``expected``: at the expected items) summed one
    server at a time, and the longer of two run at once (both in the same looks, so where looks may
    stop them, both at the expected items: ``at_once_pairs``)."""
    pairs = at_once_pairs(steps)
    paired = {s for pair in pairs for s in pair}
    alone = [s for s in full if s not in paired]
    total = sum(full[s] for s in alone) + sum(max(full[a], full[b]) for a, b in pairs)
    expected_total = sum(expected[s] for s in alone) + sum(max(expected[a], expected[b]) for a, b in pairs)
    said = []
    together = [c for c in choices if c.together]
    if together:
        listed = "; ".join(f"{' and '.join(c.servers)} ({c.why})" for c in together)
        said.append(
            f"evals at once: {listed}: a pair's eval wall is the longer of the two, not their sum; a task with "
            "looks runs in the same looks on both (each waits at a look for the other's items of it) and both "
            "stop where the paired gate does, so each is charged the expected share of the evals-with-looks line"
        )
    apart = [c for c in choices if not c.together]
    if apart:
        more = f" ({len(apart) - 1} more pair(s) likewise)" if len(apart) > 1 else ""
        said.append(f"evals of {' and '.join(apart[0].servers)} one server at a time: {apart[0].why}{more}")
    return EvalWall(total, expected_total, "; ".join(said) or None)


# --- in the eval process -------------------------------------------------------------------------


class _QueueStatus:
    def __init__(self, sink: Any, server: str) -> None:
        self.sink, self.server = sink, server

    def update(self, text: str, *, lead: str = "") -> None:
        self.sink.put(("status", self.server, lead + text))


class _QueueReporter:
    """A Reporter that sends what an eval process says to the run's reporter."""

    live = False

    def __init__(self, sink: Any, server: str) -> None:
        self.sink, self.server = sink, server

    def line(self, text: str, *, style: Style | None = None, lead: str = "") -> None:  # noqa: ARG002 (Reporter.line)
        self.sink.put(("line", self.server, lead + text))

    def table(self, table: Table) -> None:
        self.sink.put(("table", self.server, table))

    @contextmanager
    def status(self, text: str, *, lead: str = "") -> Iterator[Status]:
        found = _QueueStatus(self.sink, self.server)
        found.update(text, lead=lead)
        yield found

    @contextmanager
    def progress(self) -> Iterator[ProgressBoard]:
        from byog.core.reporter import NullReporter

        with NullReporter().progress() as board:
            yield board


def _interrupted(*_: object) -> None:
    raise KeyboardInterrupt


def _evaluate(
    plan: Plan,
    server: str,
    endpoint: Endpoint,
    rd: RunDir,
    data_dir: Path | None,
    sink: Any,
    partner: str,
    partner_ended: Any,
    run_pid: int,
) -> None:
    """One server's evals, in its own process, in the same looks as ``partner``'s (``partner_ended``: set
    by the run when that process ends; a run that has ended itself counts as well); its last message
    says how they ended."""
    signal.signal(signal.SIGTERM, _interrupted)  # a stop from the run: clean up as after Ctrl-C

    def gone() -> bool:
        return bool(partner_ended.is_set()) or os.getppid() != run_pid

    try:
        run_evals_for_server(plan, server, endpoint, rd, data_dir, _QueueReporter(sink, server), Partner(partner, gone))
    except ByogError as err:
        sink.put(("failed", server, ("byog", err.exit_code, str(err))))
    except KeyboardInterrupt:
        sink.put(("failed", server, ("interrupted", 130, "interrupted")))
    except BaseException as err:  # a bug: its traceback goes back with it
        sink.put(("failed", server, ("bug", 1, f"{type(err).__name__}: {err}\n{traceback.format_exc()}")))
    else:
        sink.put(("done", server, None))


# --- in the run ----------------------------------------------------------------------------------


def _error(server: str, how: tuple[str, int, str]) -> BaseException:
    kind, code, message = how
    if kind == "byog":
        return ByogError(message, exit_code=code)
    if kind == "interrupted":
        return KeyboardInterrupt()
    return RuntimeError(f"the eval process of {server} failed: {message}")


class _Evals:
    """The eval processes of one step, and what each said."""

    def __init__(self, rd: RunDir, reporter: Reporter, status: Status) -> None:
        self.rd, self.reporter, self.status = rd, reporter, status
        self.context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self.sink = self.context.Queue()
        self.procs: dict[str, BaseProcess] = {}
        self.started: dict[str, Instant] = {}
        self.said: dict[str, str] = {}
        self.failed: list[BaseException] = []
        self.ended: dict[str, Any] = {}  # server -> an Event set when its process has ended

    def _event(self, server: str) -> Any:
        return self.ended.setdefault(server, self.context.Event())

    def start(self, plan: Plan, server: str, endpoint: Endpoint, data_dir: Path | None, partner: str) -> None:
        self.started[server] = now()
        args = (plan, server, endpoint, self.rd, data_dir, self.sink, partner, self._event(partner), os.getpid())
        proc = self.context.Process(target=_evaluate, args=args, name=f"byog-evals-{server}")
        proc.start()
        self.procs[server] = proc

    def _ended(self, server: str, error: BaseException | None) -> None:
        add_span(self.rd, server, "eval", self.started[server], now())
        self._event(server).set()  # the partner waiting at a look gives the looks up
        self.procs.pop(server).join(STOP_GRACE_S)
        if error is not None:
            self.failed.append(error)

    def _take(self, message: tuple[str, str, Any]) -> None:
        kind, server, body = message
        if kind == "line":
            self.reporter.line(body)
        elif kind == "table":
            self.reporter.table(body)
        elif kind == "status":
            self.said[server] = body
            self.status.update(" | ".join(self.said[s] for s in sorted(self.said)))
        elif server in self.procs:
            self._ended(server, None if kind == "done" else _error(server, body))

    def wait(self) -> None:
        """Until every process has ended, passing on what each says."""
        while self.procs:
            try:
                self._take(self.sink.get(timeout=0.5))
                continue
            except queue_module.Empty:
                pass
            for server, proc in list(self.procs.items()):
                if not proc.is_alive():  # its last words may still be in the pipe: read them first
                    self._drain()
                    if server in self.procs:
                        message = f"the eval process of {server} exited with code {proc.exitcode} and no word"
                        self._ended(server, ByogError(message))

    def _drain(self) -> None:
        while True:
            try:
                self._take(self.sink.get(timeout=0.2))
            except queue_module.Empty:
                return

    def stop(self) -> None:
        """Stop every process still running (an interrupt, a failure): each phase ends now."""
        for proc in self.procs.values():
            proc.terminate()
        for server, proc in list(self.procs.items()):
            proc.join(STOP_GRACE_S)
            if proc.is_alive():
                proc.kill()
                proc.join()
            add_span(self.rd, server, "eval", self.started[server], now())
            self._event(server).set()
        self.procs.clear()


def run_evals_at_once(
    plan: Plan, endpoints: dict[str, Endpoint], rd: RunDir, data_dir: Path | None, reporter: Reporter, why: str
) -> None:
    """Two servers' evals, each in a process of its own, at once (``why``: the plan's reason they may);
    each eval phase recorded as it ends. A failure on one server lets the other finish (its records
    are kept), then raises. Where the two reported one GPU at their starts, one at a time after all."""
    a, b = endpoints
    seen = {n: cards_seen(read_json(rd.server_record(n)) if rd.server_record(n).is_file() else None) for n in endpoints}
    shared = shared_cards(seen, a, b)
    add_eval_order(rd, [Choice((a, b), shared is None, shared or why)])
    if shared is not None:
        reporter.line(f"evals of {a} and {b} one server at a time after all: {shared}")
        for server, endpoint in endpoints.items():
            with spent(rd, server, "eval"):
                run_evals_for_server(plan, server, endpoint, rd, data_dir, reporter)
        return
    names = " and ".join(endpoints)
    with reporter.status(f"evals of {names} at once…") as status:
        evals = _Evals(rd, reporter, status)
        try:
            for server, endpoint in endpoints.items():
                evals.start(plan, server, endpoint, data_dir, b if server == a else a)
            evals.wait()
        finally:
            evals.stop()
    if evals.failed:
        raise evals.failed[0]
