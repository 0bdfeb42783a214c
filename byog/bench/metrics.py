"""Every bench formula of byog, one function each, in one place (DESIGN.md "Bench").

Inputs are raw facts recorded by the client: integer ``time.perf_counter_ns`` timestamps taken
when a streamed chunk arrived, and the number of output tokens each chunk carried (the delta of
the server's cumulative ``usage.completion_tokens``, so a speculative chunk of k tokens counts k).
Outputs are seconds (``*_s``) or tokens per second (``*_tok_s``). A value that cannot be computed
(too few tokens, an empty window) is ``None``, never NaN. docs/metrics.md explains each formula
and maps it to the names other benchmarks use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    import numpy as np

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class RequestTrace:
    """One request as the client saw it. Only chunks that carried >= 1 output token are listed."""

    t_send_ns: int
    chunk_t_ns: Sequence[int] = field(default_factory=tuple)
    chunk_tokens: Sequence[int] = field(default_factory=tuple)
    n_in: int | None = None  # the server's usage.prompt_tokens
    n_out: int = 0  # the server's final usage.completion_tokens
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and len(self.chunk_t_ns) > 0

    @property
    def t_first_ns(self) -> int:
        return self.chunk_t_ns[0]

    @property
    def t_last_ns(self) -> int:
        return self.chunk_t_ns[-1]


# --- per request ----------------------------------------------------------------------------

def ttft_s(req: RequestTrace) -> float | None:
    """Time to first token: ``ttft = t_first - t_send``.

    ``t_first`` is the arrival of the first chunk that carried an output token (the chat API's
    role-only chunk carries none and does not count).
    """
    if not req.ok:
        return None
    return (req.t_first_ns - req.t_send_ns) / NS_PER_S


def tpot_s(req: RequestTrace) -> float | None:
    """Time per output token, first token excluded: ``tpot = (t_last - t_first) / (n_out - 1)``.

    The same definition as vLLM's ``bench serve`` (latency minus TTFT over output_len - 1).
    ``None`` when ``n_out < 2``.
    """
    if not req.ok or req.n_out < 2:
        return None
    return (req.t_last_ns - req.t_first_ns) / NS_PER_S / (req.n_out - 1)


def tok_s_user(req: RequestTrace) -> float | None:
    """Interactivity of one user: ``tok_s_user = 1 / tpot``."""
    tpot = tpot_s(req)
    return None if tpot is None or tpot <= 0 else 1.0 / tpot


def e2e_latency_s(req: RequestTrace) -> float | None:
    """End-to-end latency: ``t_last - t_send``."""
    if not req.ok:
        return None
    return (req.t_last_ns - req.t_send_ns) / NS_PER_S


def itl_s(req: RequestTrace) -> list[float]:
    """Inter-token latencies of one request, one value per output token after the first chunk.

    For chunk i > 0 carrying k_i tokens: ``gap_i = t_i - t_{i-1}``; it contributes k_i values of
    ``gap_i / k_i``. So a speculative chunk of k tokens counts k tokens, and the values sum to
    ``t_last - t_first``.
    """
    if not req.ok:
        return []
    out: list[float] = []
    times, tokens = req.chunk_t_ns, req.chunk_tokens
    for i in range(1, len(times)):
        k = tokens[i]
        if k <= 0:
            continue
        out.extend([(times[i] - times[i - 1]) / NS_PER_S / k] * k)
    return out


def itl_mean_s(req: RequestTrace) -> float | None:
    """Per-request mean ITL: ``(t_last - t_first) / (n_out - k_first)``, k_first = tokens of the first chunk.

    Equals TPOT when the first chunk carries one token (the usual case).
    """
    values = itl_s(req)
    return math.fsum(values) / len(values) if values else None


def pooled_itl_s(reqs: Iterable[RequestTrace]) -> list[float]:
    """ITL pooled over requests: the concatenation of every request's ``itl_s`` (token-weighted)."""
    out: list[float] = []
    for req in reqs:
        out.extend(itl_s(req))
    return out


# --- a wave of a batch workload -------------------------------------------------------------

def decode_window_ns(wave: Sequence[RequestTrace]) -> tuple[int, int] | None:
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


def tokens_in_window(wave: Sequence[RequestTrace], window: tuple[int, int]) -> int:
    """Output tokens generated inside the window: tokens of chunks arriving in ``(start, end]``.

    A chunk's tokens were generated since the previous chunk, so the chunk arriving exactly at
    ``start`` (the last request's first token, i.e. its prefill) is excluded and the chunk at
    ``end`` included.
    """
    start, end = window
    total = 0
    for req in wave:
        for t, k in zip(req.chunk_t_ns, req.chunk_tokens):
            if start < t <= end:
                total += k
    return total


def decode_tok_s(tokens: int, window_s: float) -> float | None:
    """Aggregate decode throughput: ``decode_tok_s = tokens generated inside the window / window length``.

    Over several waves byog uses the ratio of sums (sum of tokens / sum of window lengths), so
    a wave weighs by its window length.
    """
    return tokens / window_s if window_s > 0 else None


def decode_steps_from_tokens(tokens: int, batch_size: int, acceptance_length: float = 1.0) -> float:
    """Decode steps when the server does not count them: ``steps = tokens / (B x acceptance length)``.

    Each step emits, per request, one token plus the accepted draft tokens.
    """
    return tokens / (batch_size * acceptance_length)


def decode_step_s(window_s: float, steps: float) -> float | None:
    """Decode step time: ``decode_step_s = window length / decode steps in it``."""
    return window_s / steps if steps > 0 else None


def crosscheck_decode_tok_s(steps_per_s: float, acceptance_length: float, batch_size: int) -> float:
    """The speculative-decoding conversion: ``decode tok/s = steps/s x acceptance length x B``."""
    return steps_per_s * acceptance_length * batch_size


# --- whole point ----------------------------------------------------------------------------

def output_tok_s(reqs: Sequence[RequestTrace]) -> float | None:
    """Output throughput over the point: ``sum n_out / (max t_last - min t_send)`` (prefill included).

    vLLM bench serve's "Output token throughput" (it divides by the whole benchmark duration).
    """
    done = [r for r in reqs if r.ok]
    if not done:
        return None
    span = (max(r.t_last_ns for r in done) - min(r.t_send_ns for r in reqs)) / NS_PER_S
    return sum(r.n_out for r in done) / span if span > 0 else None


def achieved_concurrency(reqs: Sequence[RequestTrace], start_ns: int, end_ns: int) -> float | None:
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


# --- speculative decoding (from /metrics counter deltas) ------------------------------------

def acceptance_length(accepted_tokens: float, drafts: float) -> float | None:
    """Mean acceptance length: ``AL = 1 + accepted / drafts`` (tokens emitted per decode step per request).

    From deltas of ``vllm:spec_decode_num_accepted_tokens_total`` and
    ``vllm:spec_decode_num_drafts_total`` around a point. ``None`` without drafts.
    """
    return 1.0 + accepted_tokens / drafts if drafts > 0 else None


def acceptance_per_position(accepted_per_pos: Sequence[float], drafts: float) -> list[float] | None:
    """Per-position acceptance rate: ``a_i = accepted_at_position_i / drafts``.

    From ``vllm:spec_decode_num_accepted_tokens_per_pos_total{position=i}`` deltas. Note
    ``AL = 1 + sum_i a_i``.
    """
    if drafts <= 0:
        return None
    return [a / drafts for a in accepted_per_pos]


# --- distributions --------------------------------------------------------------------------

def _finite_array(values: Sequence[float]) -> "np.ndarray":
    import numpy as np

    data = np.asarray(values if isinstance(values, np.ndarray) else [v for v in values if v is not None], dtype=float)
    return data[np.isfinite(data)]


def percentiles(values: Sequence[float], qs: Sequence[float]) -> list[float | None]:
    """The qs-th percentiles (0-100): linear interpolation between order statistics.

    Computed by ``numpy.percentile`` (default method), the estimator vLLM bench serve uses;
    one partial sort serves every q.
    """
    import numpy as np

    data = _finite_array(values)
    if data.size == 0:
        return [None for _ in qs]
    return [float(x) for x in np.percentile(data, list(qs))]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100); see ``percentiles``."""
    return percentiles(values, [q])[0]


def mean(values: Sequence[float]) -> float | None:
    data = _finite_array(values)
    return math.fsum(data.tolist()) / data.size if data.size else None


def latency_stats(values: Sequence[float]) -> dict[str, float | None]:
    """mean, P50, P90, P99 of a latency (higher = slower)."""
    p50, p90, p99 = percentiles(values, (50, 90, 99))
    return {"mean": mean(values), "p50": p50, "p90": p90, "p99": p99}


def interactivity_stats(tpots_s: Sequence[float]) -> dict[str, float | None]:
    """tok/s/user: mean of 1/tpot, and Pq as ``1 / Pq(tpot)``.

    So P90 interactivity is the rate the slowest 10% of users get (1 / P90 of TPOT), as in the
    write-ups that quote "P90 interactivity"; it is not the 90th percentile of 1/tpot.
    """
    inv = [1.0 / t for t in tpots_s if t is not None and t > 0]
    p50, p90, p99 = (1.0 / p if p else None for p in percentiles(tpots_s, (50, 90, 99)))
    return {"mean": mean(inv), "p50": p50, "p90": p90, "p99": p99}
