"""Find points and numbers in a summary: shared by claims, policy and the report.

A selector (``{workload: decode, batch_size: 1}``) matches a point's own fields
(``PointSummary``); a metric is a dotted path (``tpot_s.p50``) into the point's ``metrics``
(``PointMetrics``), or one of the point's own numeric fields (``n_requests``).
"""

from __future__ import annotations

from typing import Any

from byog.core.errors import CheckFailed
from byog.schemas.bench import PointSummary
from byog.schemas.summary import Summary

_MISSING = object()


def _equal(a: Any, b: Any) -> bool:
    if (
        isinstance(a, (int, float))
        and isinstance(b, (int, float))
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return float(a) == float(b)
    return bool(a == b)


def _matches(point: PointSummary, select: dict[str, Any]) -> bool:
    fields = point.model_dump(exclude={"metrics"})
    return all(key in fields and _equal(fields[key], value) for key, value in select.items())


def find_points(
    summary: Summary, server: str, *, point: str | None = None, select: dict[str, Any] | None = None
) -> list[PointSummary]:
    return [
        candidate
        for candidate in summary.bench.points
        if candidate.server == server
        and (point is None or candidate.point_id == point)
        and (not select or _matches(candidate, select))
    ]


def describe(server: str, point: str | None, select: dict[str, Any] | None) -> str:
    where = f"point '{point}'" if point is not None else ", ".join(f"{k}={v}" for k, v in (select or {}).items())
    return f"{server} {where}"


def one_point(
    summary: Summary, server: str, *, point: str | None = None, select: dict[str, Any] | None = None
) -> PointSummary:
    found = find_points(summary, server, point=point, select=select)
    if len(found) != 1:
        what = "no point" if not found else f"{len(found)} points ({', '.join(p.point_id for p in found)})"
        raise CheckFailed(f"{describe(server, point, select)} matches {what} in summary.json")
    return found[0]


def metric_value(point: PointSummary, metric: str) -> float:
    """The number at ``metric`` (a dotted path), looked up in the point's metrics, then its fields."""
    value: Any = _MISSING
    for root in (point.metrics.model_dump() if point.metrics else {}, point.model_dump(exclude={"metrics"})):
        value = root
        for part in metric.split("."):
            value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
            if value is _MISSING:
                break
        if value is not _MISSING:
            break
    if value is _MISSING or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CheckFailed(f"point '{point.point_id}' of {point.server} has no number '{metric}'")
    return float(value)
