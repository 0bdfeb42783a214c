"""Find points and numbers in a summary.json: shared by claims, policy and the report.

A bench point in ``summary["bench"]["points"]`` carries its server, its id and its numbers.
Selectors (``{batch_size: 1, tensor_parallel_size: 16}``) match a point's own fields and the
fields of its nested ``spec`` / ``workload`` / ``params`` mappings; metrics are dotted paths
(``tpot_s.p50``) looked up in the point, then in its ``metrics`` mapping.
"""

from __future__ import annotations

from typing import Any

from byog.errors import CheckFailed

_NESTED = ("spec", "workload", "params", "metrics")
_ID_KEYS = ("point_id", "id", "point")
_MISSING = object()


def point_id(point: dict[str, Any]) -> str:
    for key in _ID_KEYS:
        if isinstance(point.get(key), str):
            return point[key]
    return "?"


def _field(point: dict[str, Any], key: str) -> Any:
    if key in point:
        return point[key]
    for nested in _NESTED:
        inner = point.get(nested)
        if isinstance(inner, dict) and key in inner:
            return inner[key]
    return _MISSING


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return a == b


def find_points(summary: dict[str, Any], server: str, *, point: str | None = None, select: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    points = summary.get("bench", {}).get("points", [])
    found = []
    for candidate in points:
        if not isinstance(candidate, dict) or candidate.get("server") != server:
            continue
        if point is not None and point_id(candidate) != point:
            continue
        if select and not all(_equal(_field(candidate, k), v) for k, v in select.items()):
            continue
        found.append(candidate)
    return found


def describe(server: str, point: str | None, select: dict[str, Any] | None) -> str:
    where = f"point '{point}'" if point is not None else ", ".join(f"{k}={v}" for k, v in (select or {}).items())
    return f"{server} {where}"


def one_point(summary: dict[str, Any], server: str, *, point: str | None = None, select: dict[str, Any] | None = None) -> dict[str, Any]:
    found = find_points(summary, server, point=point, select=select)
    if len(found) != 1:
        what = "no point" if not found else f"{len(found)} points ({', '.join(point_id(p) for p in found)})"
        raise CheckFailed(f"{describe(server, point, select)} matches {what} in summary.json")
    return found[0]


def metric_value(point: dict[str, Any], metric: str) -> float:
    value: Any = point
    for part in metric.split("."):
        value = _field(value, part) if isinstance(value, dict) else _MISSING
        if value is _MISSING:
            break
    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    if value is _MISSING or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CheckFailed(f"point '{point_id(point)}' of {point.get('server')} has no number '{metric}'")
    return float(value)
