"""The throughput–interactivity frontier: aggregate output tok/s per GPU against tok/s per user.

Why: a decode path can buy tok/s/user (interactivity) with batch throughput or the other way
round; one number at one load hides that. Across a sweep (batch sizes, concurrencies, rates) each
point is (x = tok/s one user sees, y = tok/s the deployment delivers per GPU); the points no
other point beats on both axes form the Pareto frontier, drawn as a line per server. Pure
functions of summary numbers, so the report and verify derive the same frontier.

- ``x = tok_s_user`` of the point (byog's ``1 / P50(TPOT)`` by default; any percentile can be
  passed in by the caller);
- ``y = throughput / gpus`` with ``gpus = TP x DP x PP`` of the server (decode context
  parallelism shards the KV cache over the TP GPUs and adds none);
- a point is **on the frontier** when it is valid and no other valid point has ``x' >= x`` and
  ``y' >= y`` with one of them strictly greater. Invalid points are kept (drawn, marked) but
  never on the frontier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FrontierPoint:
    label: str  # the point id (or load label) the point came from
    tok_s_user: float | None  # x
    tok_s_gpu: float | None  # y
    valid: bool


def gpus_of(tensor_parallel: int = 1, data_parallel: int = 1, pipeline_parallel: int = 1) -> int:
    """GPUs one server occupies: ``TP x DP x PP``."""
    return tensor_parallel * data_parallel * pipeline_parallel


def per_gpu(tok_s: float | None, gpus: int) -> float | None:
    """``tok_s / gpus``; ``None`` stays ``None``."""
    if tok_s is None:
        return None
    if gpus <= 0:
        raise ValueError("a server occupies at least one GPU")
    return tok_s / gpus


def _dominates(a: FrontierPoint, b: FrontierPoint) -> bool:
    assert a.tok_s_user is not None and a.tok_s_gpu is not None
    assert b.tok_s_user is not None and b.tok_s_gpu is not None
    return (
        a.tok_s_user >= b.tok_s_user
        and a.tok_s_gpu >= b.tok_s_gpu
        and (a.tok_s_user > b.tok_s_user or a.tok_s_gpu > b.tok_s_gpu)
    )


def pareto_frontier(points: Sequence[FrontierPoint]) -> list[FrontierPoint]:
    """The valid points that no other valid point dominates, by rising x (so y falls along the line).

    Two identical points are both kept (neither dominates the other). O(n^2), n = points of one
    server's sweep (tens).
    """
    usable = [p for p in points if p.valid and p.tok_s_user is not None and p.tok_s_gpu is not None]
    front = [p for p in usable if not any(_dominates(q, p) for q in usable if q is not p)]
    return sorted(front, key=lambda p: (p.tok_s_user, -(p.tok_s_gpu or 0.0)))
