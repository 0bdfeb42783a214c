"""Record what a run's time went on, as each stretch ends: the servers' ``activity`` spans (time to
verdict, in each server.json) and the run's phase record (``phases.json``, schema
``byog.schemas.phases``). This module is the one writer of both.

The runtime writes server.json at every (re)start; the pipeline adds an ``activity`` span after a
phase ends (a restart happens inside a measuring phase, before its span is added), and an
interleaved server's ``sleep_mode`` after each swap. Both are merged into the record on disk.
Every span is also a phase of phases.json, with its monotonic and Unix times; start-ups and the
warm-up waves of each batch point are phases only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from byog.analysis.gpu_sets import Choice
from byog.core.errors import ByogError
from byog.core.io import atomic_write_json, read_json
from byog.core.paths import RunDir
from byog.schemas.migrate import migrate
from byog.schemas.phases import EvalOrder, Instant, Phase, PhaseKind, PhaseLog, now
from byog.schemas.server import ActivityKind


def merge_into_server_record(rd: RunDir, server: str, update: dict[str, Any]) -> None:
    """Set top-level keys of a server.json that exists (a server that never started has none)."""
    path = rd.server_record(server)
    if path.is_file():
        atomic_write_json(path, {**read_json(path), **update})


def _phase_log(rd: RunDir) -> PhaseLog:
    """The run's phases.json so far (a record that does not parse is started afresh: the phases are a
    timing aid, and verify checks what is there)."""
    path = rd.phases_json
    try:
        return PhaseLog.model_validate(migrate("phases", read_json(path))) if path.is_file() else PhaseLog()
    except (ValueError, ByogError):
        return PhaseLog()


def add_eval_order(rd: RunDir, choices: list[Choice]) -> None:
    """Record how the run runs the evals of servers that launch one after the other (a resume that
    chooses the same adds nothing)."""
    if not choices:
        return
    log = _phase_log(rd)
    for c in choices:
        made = EvalOrder(servers=list(c.servers), launch=rd.launch, together=c.together, why=c.why)
        if made not in log.eval_order:
            log.eval_order.append(made)
    atomic_write_json(rd.phases_json, log.model_dump(mode="json"))


def add_phase(rd: RunDir, kind: PhaseKind, server: str, t0: Instant, t1: Instant) -> None:
    """Append one phase to the run's phases.json."""
    log = _phase_log(rd)
    log.phases.append(
        Phase(
            kind=kind,
            server=server,
            launch=rd.launch,
            t0_mono_s=round(t0[0], 6),
            t1_mono_s=round(t1[0], 6),
            t0_unix_s=round(t0[1], 3),
            t1_unix_s=round(t1[1], 3),
        )
    )
    atomic_write_json(rd.phases_json, log.model_dump(mode="json"))


def add_warmups(rd: RunDir, server: str, warmups: list[tuple[Instant, Instant]]) -> None:
    """The warm-up waves of a server's batch points, each (start, end), as phases inside its measuring one."""
    for t0, t1 in warmups:
        add_phase(rd, "warm-up", server, t0, t1)


def add_span(rd: RunDir, server: str, kind: ActivityKind, t0: Instant, t1: Instant) -> None:
    """A server's activity span (in its server.json, when it has one) and the run's phase of the same times."""
    add_phase(rd, kind, server, t0, t1)
    path = rd.server_record(server)
    if not path.is_file():
        return
    spans = list(read_json(path).get("activity") or [])
    spans.append({"kind": kind, "t0_unix_s": round(t0[1], 3), "t1_unix_s": round(t1[1], 3)})
    merge_into_server_record(rd, server, {"activity": spans})


@contextmanager
def spent(rd: RunDir, server: str, kind: ActivityKind) -> Iterator[None]:
    """Time the block and add it as a span of ``server``, also when it raises (an interrupted phase took its time)."""
    t0 = now()
    try:
        yield
    finally:
        add_span(rd, server, kind, t0, now())


@contextmanager
def phase(rd: RunDir, kind: PhaseKind, server: str) -> Iterator[None]:
    """Time the block as a phase of phases.json only (a start-up), also when it raises."""
    t0 = now()
    try:
        yield
    finally:
        add_phase(rd, kind, server, t0, now())
