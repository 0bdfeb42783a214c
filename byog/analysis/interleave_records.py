"""Whether an interleaved pair ran in ABBA order, read from what was recorded, never from the labels.

A row's ``interleave_seq`` is a label the run wrote; the order is what the records show. For every
batch point of an interleaved pair (``byog.analysis.interleave``), both sides' rows and both
servers' ``sleep_mode`` swaps (``SwapRecord``) must show:

- the plan's pair says ``interleave: true``, and each server's ``sleep_mode`` names its partner and
  its side (A the baseline, B the candidate); rows labelled on any other server are refused;
- every visit 0 .. 2W-1 labelled once, each on the side ``side_of`` gives it (so A B B A ...; an
  A B A B order is not ABBA);
- the visits in that order in time: each visit's last chunk before the next visit's first send
  (one client clock, ``perf_counter_ns``, for both sides), so labels over sequential times fail;
- a swap that woke the side of every visit that follows the other side's, from the partner, and no
  swap before a visit that continues its side; the point's swaps in visit order in wall time, each
  one's sleep starting after the previous one's wake ended; and the visits between two swaps no
  longer than the wall time between them.

``byog.analysis.bench_summary`` pairs a point's waves by ABBA block only where this holds; verify's
``records`` check fails, one sentence, where it does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from byog.analysis import wake
from byog.analysis.interleave import follows_wake, side_of
from byog.analysis.request_columns import RequestColumns, read_request_columns
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.schemas.bench import BenchPoint
from byog.schemas.plan import Plan
from byog.schemas.server import ServerRecord, SwapRecord

NS_PER_S = 1_000_000_000
# The wall-clock stamps are rounded (at_unix_s to 1 ms, sleep_s and wake_s to 0.1 ms) and come from
# another clock than the rows' (time.time against perf_counter_ns): the slack allowed between them.
CLOCK_SLACK_S = 0.05


@dataclass(frozen=True)
class Side:
    name: str
    side: str  # "A" (the baseline) or "B" (the candidate)
    rows: RequestColumns
    record: ServerRecord | None


def visit_spans(rows: RequestColumns) -> dict[int, tuple[int, int]]:
    """Per visit (``interleave_seq``): (first send, last chunk or send) of its rows, client ns."""
    if rows.interleave_seq is None:
        return {}
    ends = np.maximum(rows.t_send_ns, _last_chunk(rows))
    spans: dict[int, tuple[int, int]] = {}
    for seq in sorted(set(rows.interleave_seq.tolist())):
        at = rows.interleave_seq == seq
        spans[int(seq)] = (int(rows.t_send_ns[at].min()), int(ends[at].max()))
    return spans


def _last_chunk(rows: RequestColumns) -> np.ndarray:
    counts = rows.counts
    last = np.zeros(len(rows), dtype=np.int64)
    has = counts > 0
    last[has] = rows.chunk_t_ns[rows.offsets[1:][has] - 1]
    return last


def _swaps(side: Side, point_id: str) -> list[SwapRecord]:
    mode = side.record.sleep_mode if side.record is not None else None
    return [s for s in (mode.swaps if mode is not None else []) if s.point_id == point_id]


def _labels(sides: list[Side], waves: int, where: str) -> Iterator[str]:
    seen: dict[int, str] = {}
    for s in sides:
        for seq in visit_spans(s.rows):
            if seq in seen:
                yield f"{where}: visit {seq} is labelled on both {seen[seq]} and {s.name}"
                return
            if seq >= 2 * waves:
                yield f"{where}: {s.name} labels visit {seq}, but the point has {2 * waves} visits"
                return
            if side_of(seq) != s.side:
                yield f"{where}: {s.name} (side {s.side}) labels visit {seq}, which ABBA gives side {side_of(seq)}"
                return
            seen[seq] = s.name
    missing = [seq for seq in range(2 * waves) if seq not in seen]
    if missing:
        yield f"{where}: visit {missing[0]} of {2 * waves} has no rows"


def _time_order(sides: list[Side], where: str) -> Iterator[str]:
    spans = {seq: span for s in sides for seq, span in visit_spans(s.rows).items()}
    for seq in sorted(spans)[:-1]:
        if seq + 1 in spans and spans[seq][1] > spans[seq + 1][0]:
            yield (
                f"{where}: visit {seq + 1} was sent {(spans[seq][1] - spans[seq + 1][0]) / NS_PER_S:.3f} s before "
                f"visit {seq} ended: the rows were not measured in the order their labels say"
            )
            return


def _swap_order(sides: list[Side], point_id: str, where: str) -> Iterator[str]:
    swaps: dict[int, SwapRecord] = {}
    for s in sides:
        partner = next(o.name for o in sides if o is not s)
        for swap in _swaps(s, point_id):
            if swap.from_server != partner:
                yield f"{where}: {s.name} records a swap from '{swap.from_server}', not from its partner {partner}"
                return
            if swap.seq in swaps or swap.seq < 0 or side_of(swap.seq) != s.side or not follows_wake(swap.seq):
                yield f"{where}: {s.name} records a swap before visit {swap.seq}, which no ABBA swap precedes"
                return
            swaps[swap.seq] = swap
    needed = [seq for seq in range(1, max(_visits(sides), default=0) + 1) if follows_wake(seq) and seq not in swaps]
    if needed:
        woke = next(s.name for s in sides if s.side == side_of(needed[0]))
        yield f"{where}: no swap woke {woke} before visit {needed[0]}: the sides did not take turns"
        return
    spans = {seq: span for s in sides for seq, span in visit_spans(s.rows).items()}
    order = sorted(swaps)
    for before, after in zip(order, order[1:], strict=False):
        first, then = swaps[before], swaps[after]
        woke_at = first.at_unix_s + first.sleep_s + first.wake_s
        if then.at_unix_s < woke_at:
            yield (
                f"{where}: the swap before visit {after} put a server to sleep at {then.at_unix_s:.3f}, before the "
                f"swap before visit {before} had woken it ({woke_at:.3f})"
            )
            return
        ran = [spans[seq] for seq in range(before, after) if seq in spans]
        if ran and (ran[-1][1] - ran[0][0]) / NS_PER_S > then.at_unix_s - woke_at + CLOCK_SLACK_S:
            yield (
                f"{where}: visits {before}..{after - 1} took {(ran[-1][1] - ran[0][0]) / NS_PER_S:.3f} s, more than "
                f"the {then.at_unix_s - woke_at:.3f} s between the swaps around them"
            )
            return


def _visits(sides: list[Side]) -> list[int]:
    return [seq for s in sides for seq in visit_spans(s.rows)]


def _mode_problems(sides: list[Side], where: str) -> Iterator[str]:
    for s in sides:
        partner = next(o.name for o in sides if o is not s)
        mode = s.record.sleep_mode if s.record is not None else None
        if mode is None:
            yield f"{where}: {s.name} has no sleep_mode record, so no swap shows the pair took turns"
        elif mode.partner != partner or mode.side != s.side:
            yield (
                f"{where}: {s.name}'s sleep_mode says side {mode.side} with partner {mode.partner}, "
                f"the plan side {s.side} with {partner}"
            )


def point_problems(sides: list[Side], point: BenchPoint) -> list[str]:
    """Why one point of an interleaved pair (``sides``: A then B) did not run ABBA; [] when it did."""
    where = f"interleaved {sides[1].name} vs {sides[0].name} at {point.point_id}"
    if any(s.rows.interleave_seq is None for s in sides):
        return [f"{where}: {next(s.name for s in sides if s.rows.interleave_seq is None)}'s rows carry no visits"]
    for found in (_mode_problems(sides, where), _labels(sides, point.wave_cap, where), _time_order(sides, where)):
        problems = list(found)
        if problems:
            return problems
    return list(_swap_order(sides, point.point_id, where))


def _rows(run_dir: RunDir, server: str, point_id: str) -> RequestColumns | None:
    path = run_dir.bench_rows(server, point_id)
    return read_request_columns(path) if run_dir.bench_point_complete(server, point_id) and path.is_file() else None


def _record(run_dir: RunDir, server: str) -> ServerRecord | None:
    path = run_dir.server_record(server)
    return ServerRecord.model_validate(read_json(path)) if path.is_file() else None


@dataclass
class InterleaveCheck:
    problems: list[str]  # one sentence each
    held: set[tuple[str, str]]  # (server, point_id) whose waves may be paired by ABBA block


def _labelled(run_dir: RunDir, server: str, point_id: str) -> bool:
    """Whether the point's rows carry visits, reading that one column (every sequential point is asked)."""
    import pyarrow.parquet as pq

    path = run_dir.bench_rows(server, point_id)
    if not path.is_file():
        return False
    rows = pq.ParquetFile(path)
    if "interleave_seq" not in rows.schema_arrow.names:
        return False
    seq = rows.read(columns=["interleave_seq"], use_threads=False).column(0)
    return seq.null_count < len(seq) and len(seq) > 0


def _stray_labels(run_dir: RunDir, plan: Plan, points: list[BenchPoint]) -> list[str]:
    """Rows labelled with visits on a server of no interleaved pair: labels no swap ever backed."""
    paired = {name for pair in plan.interleaved_pairs for name in pair}
    found = []
    for point in points:
        for server in [s for s in point.servers if s not in paired]:
            if _labelled(run_dir, server, point.point_id):
                found.append(
                    f"{server}'s rows at {point.point_id} carry interleave labels, but the plan runs it in no "
                    "interleaved pair"
                )
    return found


def _fell_back(sides: list[Side], point_id: str) -> bool:
    """Every side records the point as measured sequentially after a wake failed, and no row says otherwise."""
    modes = [s.record.sleep_mode if s.record is not None else None for s in sides]
    listed = all(m is not None and point_id in m.fallback_points for m in modes)
    return listed and all(s.rows.interleave_seq is None for s in sides)


def _wake_problems(sides: list[Side], point_id: str) -> list[str]:
    """Interleaved rows still in use at a point whose visits a failed wake check invalidated, or a point
    listed as measured sequentially that carries visits."""
    out = []
    for s in sides:
        mode = s.record.sleep_mode if s.record is not None else None
        if mode is None:
            continue
        labelled = s.rows.interleave_seq is not None
        bad = [why for p, why in wake.invalid_points(mode) if p == point_id]
        if bad and labelled:
            out.append(
                f"{bad[0]}; {s.name}'s interleaved rows at {point_id}, measured since its last good one, are used"
            )
        if point_id in mode.fallback_points and labelled:
            out.append(f"{s.name}'s rows at {point_id} carry visits, but its record says the point ran sequentially")
    return out


def check_interleaving(run_dir: RunDir, plan: Plan) -> InterleaveCheck:
    """Every point's interleaving as its records show it (see the module's docstring)."""
    points = expand_plan(plan)
    result = InterleaveCheck(_stray_labels(run_dir, plan, points), set())
    for candidate, baseline in plan.interleaved_pairs:
        for point in [p for p in points if p.kind == "batch" and candidate in p.servers and baseline in p.servers]:
            base_rows, cand_rows = (_rows(run_dir, name, point.point_id) for name in (baseline, candidate))
            if base_rows is None or cand_rows is None:
                continue  # a point that did not complete is the summary's to report
            sides = [
                Side(baseline, "A", base_rows, _record(run_dir, baseline)),
                Side(candidate, "B", cand_rows, _record(run_dir, candidate)),
            ]
            found = _wake_problems(sides, point.point_id)
            if _fell_back(sides, point.point_id) and not found:
                continue  # measured sequentially after a wake failed its check: plain statistics
            found = found or point_problems(sides, point)
            result.problems += found
            if not found:
                result.held |= {(baseline, point.point_id), (candidate, point.point_id)}
    return result
