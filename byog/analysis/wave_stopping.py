"""Sequential stopping of a batch point: measure waves until its decode-rate CI is narrow enough.

The rule (docs/statistics.md §8): after each measured wave k, the relative half-width

    h_k = (hi_k - lo_k) / (2 x decode_tok_s(waves 1..k))

of the 95% wave bootstrap CI of decode tok/s over waves 1..k (the summary's wave values: tokens
and decode-window length per wave, ``bench_summary.Unit``; the same resample count and percentiles
as the comparisons' wave bootstrap). The point stops after the first k >= ``min_waves`` with
h_k <= ``target``, else at k = ``max_waves``. h_k is None below two waves or when a wave has no
decode window (it then never meets the target).

The bootstrap is seeded from the point's prompt seed, its id and the server, so the sweep and
``byog verify`` (``bundles/checks/stopping.py``) compute the same h_k from the same recorded waves.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from byog.analysis.bench_summary import BOOTSTRAP_RESAMPLES, CI_LEVEL, Unit, decode_rate, interval, wave_units
from byog.analysis.request_columns import RequestColumns
from byog.schemas.bench import BenchPoint, PointRecord, RequestRow, WaveStopping
from byog.schemas.chunk_timing import as_stored_ns

Reason = Literal["target", "cap"]


@dataclass(frozen=True)
class Rule:
    target: float  # relative half-width
    min_waves: int
    max_waves: int

    @classmethod
    def of(cls, point: BenchPoint) -> Rule | None:
        """The point's rule; None when it runs a fixed number of waves."""
        if point.kind != "batch" or point.ci_target is None:
            return None
        return cls(point.ci_target, point.waves, point.wave_cap)

    def stops(self, k: int, half_width: float | None) -> Reason | None:
        """Why the point stops after its k-th measured wave, or None to measure another."""
        if k >= self.min_waves and half_width is not None and half_width <= self.target:
            return "target"
        return "cap" if k >= self.max_waves else None

    def record(self, half_widths: Sequence[float | None]) -> WaveStopping:
        """The stopping record of a point that measured ``len(half_widths)`` waves under this rule."""
        decided = decide(self, half_widths)
        assert decided is not None, "a point stops only when its rule says so"
        waves, reason = decided
        return WaveStopping(
            target=self.target,
            min_waves=self.min_waves,
            max_waves=self.max_waves,
            level=CI_LEVEL,
            half_widths=list(half_widths),
            waves=waves,
            reason=reason,
        )


def decide(rule: Rule, half_widths: Sequence[float | None]) -> tuple[int, Reason] | None:
    """(waves, reason): the first wave after which ``rule`` stops, given h_1, h_2, ...; None when
    the sequence ends before the rule stops."""
    for k, h in enumerate(half_widths, start=1):
        reason = rule.stops(k, h)
        if reason is not None:
            return k, reason
    return None


def seed_of(point: BenchPoint, server: str) -> list[int]:
    return [point.prompt_seed, zlib.crc32(f"{point.point_id}/{server}/stopping".encode())]


def half_width(units: Sequence[Unit], seed: list[int], resamples: int = BOOTSTRAP_RESAMPLES) -> float | None:
    """h of these waves: the relative half-width of the percentile bootstrap CI of decode tok/s."""
    if len(units) < 2:
        return None
    rate = decode_rate(units)
    if rate is None or any(u.window_s <= 0 for u in units):
        return None
    rows = np.random.default_rng(seed).integers(0, len(units), (resamples, len(units)))
    tokens = np.array([u.tokens for u in units], dtype=np.float64)
    window = np.array([u.window_s for u in units], dtype=np.float64)
    low, high = interval((tokens[rows].sum(axis=1) / window[rows].sum(axis=1)).tolist(), CI_LEVEL)
    if low is None or high is None:
        return None
    return (high - low) / (2.0 * rate)


def half_widths(units: Sequence[Unit], seed: list[int]) -> list[float | None]:
    """h_1 .. h_n of a point's measured waves, in wave order."""
    return [half_width(units[:k], seed) for k in range(1, len(units) + 1)]


class LiveStopping:
    """The sweep's side of the rule: fed each measured wave's rows as it ends, says when to stop."""

    def __init__(self, point: BenchPoint, server: str, rule: Rule) -> None:
        self.point, self.rule, self.seed = point, rule, seed_of(point, server)
        self.units: list[Unit] = []
        self.widths: list[float | None] = []

    def after_wave(self, rows: Sequence[RequestRow]) -> bool:
        """Add one measured wave; True when the point should stop now."""
        # on the stored rows' microsecond grid, so verify recomputes the same h_k from the bundle
        stored = [r.model_copy(update={"chunk_t_ns": as_stored_ns(r.chunk_t_ns)}) for r in rows]
        self.units += wave_units(self.point, RequestColumns.from_rows(stored))
        self.widths.append(half_width(self.units, self.seed))
        return self.rule.stops(len(self.widths), self.widths[-1]) is not None

    def record(self) -> WaveStopping:
        return self.rule.record(self.widths)


def _pct(h: float | None) -> str:
    return "none" if h is None else f"{h:.2%}"


def _same(a: Sequence[float | None], b: Sequence[float | None]) -> bool:
    return len(a) == len(b) and all(
        (x is None and y is None) or (x is not None and y is not None and abs(x - y) <= 1e-9 * max(abs(y), 1e-12))
        for x, y in zip(a, b, strict=True)
    )


def recorded_problem(record: PointRecord, rows: RequestColumns | None, planned: BenchPoint | None = None) -> str | None:
    """Why a point record's stopping does not follow from its recorded waves (one clause), or None.

    Recomputes h_1..h_n from the rows' measured waves and the rule from the point (and the plan's
    point, ``planned``, where given), and holds the record's decision to what they say.
    """
    point, stopping = record.point, record.stopping
    rule = Rule.of(point)
    if record.status != "complete" or (rule is None and stopping is None):
        return None
    if stopping is None:
        return "it ran with a CI target but has no stopping record"
    stated = Rule(stopping.target, stopping.min_waves, stopping.max_waves)
    if rule is None or stated != rule:
        return f"its stopping record states the rule {_rule_text(stated)} but its point ran {_rule_text(rule)}"
    if planned is not None and Rule.of(planned) != rule:
        return f"its stopping rule {_rule_text(rule)} is not the plan's {_rule_text(Rule.of(planned))}"
    units = wave_units(point, rows) if rows is not None else []
    widths = half_widths(units, seed_of(point, record.server))
    decided = decide(rule, widths)
    if decided is None:
        return (
            f"its {len(units)} recorded waves end before the rule {_rule_text(rule)} stops "
            f"(half-width {_pct(widths[-1] if widths else None)} after the last)"
        )
    waves, reason = decided
    if (waves, reason) != (len(units), stopping.reason) or stopping.waves != len(units):
        at = _pct(widths[waves - 1])
        return (
            f"its {len(units)} recorded waves stop the rule {_rule_text(rule)} after wave {waves} ({reason}, "
            f"half-width {at}), but the record says {stopping.waves} ({stopping.reason})"
        )
    for k in range(max(len(widths), len(stopping.half_widths))):
        said, found = stopping.half_widths[k : k + 1], widths[k : k + 1]
        if not _same(said, found):
            return (
                f"its record gives the half-width after wave {k + 1} as {_pct(said[0] if said else None)}, "
                f"its recorded waves give {_pct(found[0] if found else None)}"
            )
    return None


def _rule_text(rule: Rule | None) -> str:
    if rule is None:
        return "(fixed waves)"
    return f"({rule.target:.2%} target, {rule.min_waves}-{rule.max_waves} waves)"
