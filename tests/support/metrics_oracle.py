"""Per-request twins of the ``*_columns`` formulas of byog.analysis.metrics: the oracle the
column formulas are held to (tests/unit/analysis/test_request_columns.py), one request and one
chunk at a time, in plain Python."""

from __future__ import annotations

import math
from collections.abc import Sequence

from byog.analysis.metrics import itl_s
from byog.schemas.bench import RequestRow


def itl_mean_s(req: RequestRow) -> float | None:
    """Per-request mean ITL: ``(t_last - t_first) / (n_out - k_first)``, k_first = tokens of the first chunk.

    Equals TPOT when the first chunk carries one token (the usual case).
    """
    values = itl_s(req)
    return math.fsum(values) / len(values) if values else None


def decode_window_ns(wave: Sequence[RequestRow]) -> tuple[int, int] | None:
    """Decode window of a wave: ``[max_r t_first_r, min_r t_last_r]``.

    Inside it every request of the wave has had its first token and none has finished, so the
    server decodes the whole batch and does no prefill of this wave. ``None`` when a request
    failed or the window is empty (some request finished before another one started).
    """
    if not wave or not all(r.ok for r in wave):
        return None
    start = max(r.t_first_ns for r in wave)
    end = min(r.t_last_ns for r in wave)
    return (start, end) if end > start else None


def tokens_in_window(wave: Sequence[RequestRow], window: tuple[int, int]) -> int:
    """Output tokens generated inside the window: tokens of chunks arriving in ``(start, end]``.

    A chunk's tokens were generated since the previous chunk, so the chunk arriving exactly at
    ``start`` (the last request's first token, i.e. its prefill) is excluded and the chunk at
    ``end`` included.
    """
    start, end = window
    total = 0
    for req in wave:
        for t, k in zip(req.chunk_t_ns, req.chunk_tokens, strict=True):
            if start < t <= end:
                total += k
    return total


def steps_in_window(wave: Sequence[RequestRow], window: tuple[int, int]) -> float:
    """Engine steps inside a wave's decode window, counted by the client: the mean over the wave's
    requests of the chunks arriving in ``(start, end]``.

    vLLM streams what one engine step produced for a request (one token, or 1 + accepted draft
    tokens) as one SSE event, and inside the window every request takes part in every step, so
    each request's chunk count is the step count. Independent of the acceptance length. vLLM
    merges two steps into one event only when its API server falls behind (on the H200 at B = 64:
    1 merged chunk in 65,536 tokens), which would make this count low.
    """
    if not wave:
        return 0.0
    start, end = window
    chunks = sum(1 for req in wave for t in req.chunk_t_ns if start < t <= end)
    return chunks / len(wave)


def achieved_concurrency(reqs: Sequence[RequestRow], start_ns: int, end_ns: int) -> float | None:
    """Time-weighted mean number of requests in flight over ``[start, end]``.

    A request is in flight from ``t_send`` to ``t_last`` (its last token). Equals the target
    C of a closed loop that keeps C requests busy.
    """
    if end_ns <= start_ns:
        return None
    busy = 0
    for r in reqs:
        t_end = r.t_last_ns if r.ok else r.t_send_ns
        lo, hi = max(r.t_send_ns, start_ns), min(t_end, end_ns)
        busy += max(0, hi - lo)
    return busy / (end_ns - start_ns)
