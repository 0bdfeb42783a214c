"""Hostile inputs of issue 47 (items 4-6) that the unit tests and ``benchmarks/hostile_47b.py`` share:
edits of a real interleaved run's records, impossible time-to-verdict records, and strings that act
on a terminal. Only APIs every byog tree has are used, so the benchmark can count a tree without
the fixes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from byog.core.io import atomic_write_json, read_json
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.schemas.bench import read_request_rows, write_request_rows
from byog.schemas.server import ServerRecord
from tests.support.interleave_run import SWEEP_PLAN

# What an image's builder or a bundle's author can put in a string that reaches the console.
OSC8 = "\x1b]8;;https://evil.example\x1b\\click me\x1b]8;;\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
RLO = "txt.\u202eexe"
FORGED = "x\nok   signature: trusted signer alice (SHA256:forged)"
CSI_C1 = "\x9b31mred"


def batch_id() -> str:
    return next(p.point_id for p in expand_plan(parse_plan(SWEEP_PLAN, "plan.yaml")) if p.kind == "batch")


def _rewrite_rows(rd: RunDir, server: str, change: Callable[[Any], dict[str, Any]]) -> None:
    path = rd.bench_rows(server, batch_id())
    write_request_rows(path, [row.model_copy(update=change(row)) for row in read_request_rows(path)])


def abab_order(rd: RunDir) -> None:
    """The sides alternate A B A B: base on the even visits, cand on the odd ones (times follow the labels)."""
    relabel = {0: 0, 3: 2, 4: 4, 7: 6, 1: 1, 2: 3, 5: 5, 6: 7}
    for server in ("base", "cand"):
        _rewrite_rows(rd, server, lambda r: {"interleave_seq": relabel[r.interleave_seq]})


def labels_over_sequential_times(rd: RunDir) -> None:
    """ABBA labels kept, but every cand row moved after every base row: two sequential runs."""
    later = 10**12
    _rewrite_rows(
        rd, "cand", lambda r: {"t_send_ns": r.t_send_ns + later, "chunk_t_ns": [t + later for t in r.chunk_t_ns]}
    )


def labels_on_a_sequential_plan(rd: RunDir) -> None:
    (rd.root / "plan.yaml").write_text(SWEEP_PLAN.replace("interleave: true", "interleave: false"))


def _edit_swaps(rd: RunDir, server: str, change: Callable[[list[dict[str, Any]]], None]) -> None:
    record = read_json(rd.server_record(server))
    change(record["sleep_mode"]["swaps"])
    atomic_write_json(rd.server_record(server), record)


def sleep_before_the_previous_wake(rd: RunDir) -> None:
    """cand's swap before visit 1 ends an hour later than recorded: base was put to sleep again (visit 3)
    before it had been woken."""
    _edit_swaps(rd, "cand", lambda swaps: swaps[0].update(wake_s=swaps[0]["wake_s"] + 3600))


def a_swap_left_out(rd: RunDir) -> None:
    _edit_swaps(rd, "cand", lambda swaps: swaps.pop(0))


HOSTILE_ORDERS: dict[str, tuple[Callable[[RunDir], None], str]] = {
    "ABAB order": (abab_order, "labels visit 2, which ABBA gives side B"),
    "ABBA labels over sequential times": (labels_over_sequential_times, "not measured in the order their labels say"),
    "labels on a sequential plan": (labels_on_a_sequential_plan, "carry interleave labels, but the plan runs it"),
    "sleep before the other's wake": (sleep_before_the_previous_wake, "before the swap before visit 1 had woken it"),
    "a swap left out": (a_swap_left_out, "no swap woke cand before visit 1"),
}


PLAN = parse_plan(  # a pair of one batch point, interleaved
    """\
name: t
model: {path: /m}
servers: {cand: {}, base: {}}
baseline: base
pairs: [{candidate: cand, baseline: base, interleave: true}]
workloads:
  - {kind: batch, name: decode, batch_sizes: [1], isl: [5], osl: [12], waves: 2}
""",
    "plan.yaml",
)
POINT = "decode-b1-isl5-osl12"
T0 = 1_764_979_200.0  # 2025-12-06 00:00 UTC
START = {"started_at": "2025-12-06T00:00:00+00:00", "ready_after_s": 30.0}


def record(**fields: Any) -> ServerRecord:
    return ServerRecord.model_validate({"name": "cand", "starts": [START], **fields})


def span(t0: float, t1: float, kind: str = "measure") -> dict[str, Any]:
    return {"kind": kind, "t0_unix_s": T0 + t0, "t1_unix_s": T0 + t1}


def swaps(*items: dict[str, Any]) -> dict[str, Any]:
    base = {"point_id": POINT, "from_server": "base", "sleep_s": 0.5, "wake_s": 0.6, "at_unix_s": T0 + 40}
    return {"partner": "base", "side": "B", "level": 1, "swaps": [{**base, **item} for item in items]}


HOSTILE_TIMES: dict[str, tuple[ServerRecord, str]] = {
    "a negative span": (record(activity=[span(100, 40)]), "a measure span ends 60.0 s before it starts"),
    "a span of 40 days": (record(activity=[span(40, 40 + 40 * 86400)]), "a measure span lasts 40 days"),
    "a 31-year start-up": (
        record(starts=[{"started_at": "1995-01-01T00:00:00+00:00", "ready_after_s": 30.0}], activity=[span(40, 50)]),
        "more than any run",
    ),
    "a start-up of negative length": (
        record(starts=[{**START, "ready_after_s": -5.0}], activity=[span(40, 50)]),
        "a start-up took -5.0 s",
    ),
    "a span before the server started": (record(activity=[span(-3600, 50)]), "starts 3600.0 s before the server did"),
    "a start time that is not a time": (
        record(starts=[{**START, "started_at": "yesterday"}], activity=[span(40, 50)]),
        "is not a time",
    ),
    "sleep_s < 0": (record(activity=[span(40, 50)], sleep_mode=swaps({"seq": 1, "sleep_s": -1.0})), "slept -1.0 s"),
    "swap seq out of range": (
        record(activity=[span(40, 50)], sleep_mode=swaps({"seq": 9})),
        f"a swap before visit 9 of {POINT} is outside it",
    ),
    "swap of an unknown point": (
        record(activity=[span(40, 50)], sleep_mode=swaps({"seq": 1, "point_id": "nowhere"})),
        "is outside it",
    ),
}
