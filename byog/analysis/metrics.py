"""Every bench formula of byog, one function each, in one place (docs/metrics.md).

Inputs are raw facts recorded by the client (``RequestRow``): integer ``time.perf_counter_ns``
timestamps taken when a streamed chunk arrived, and the number of output tokens each chunk carried (the delta of
the server's cumulative ``usage.completion_tokens``, so a speculative chunk of k tokens counts k).
Outputs are seconds (``*_s``) or tokens per second (``*_tok_s``). A value that cannot be computed
(too few tokens, an empty window) is ``None``, never NaN. docs/metrics.md explains each formula
and maps it to the names other benchmarks use.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TypeAlias, TypedDict

import numpy as np

from byog.analysis.request_columns import RequestColumns
from byog.schemas.bench import RequestRow

Floats: TypeAlias = "Sequence[float] | np.ndarray"  # plain values or one numpy column


class Stats(TypedDict):
    """mean, P50, P90, P99 of one quantity (None: no data); the fields of ``schemas.bench.Percentiles``."""

    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None


NS_PER_S = 1_000_000_000


# --- per request ----------------------------------------------------------------------------


def ttft_s(req: RequestRow) -> float | None:
    """Time to first token: ``ttft = t_first - t_send``.

    ``t_first`` is the arrival of the first chunk that carried an output token (the chat API's
    role-only chunk carries none and does not count).
    """
    if not req.ok:
        return None
    return (req.t_first_ns - req.t_send_ns) / NS_PER_S


def tpot_s(req: RequestRow) -> float | None:
    """Time per output token, first token excluded: ``tpot = (t_last - t_first) / (n_out - 1)``.

    The same definition as vLLM's ``bench serve`` (latency minus TTFT over output_len - 1).
    ``None`` when ``n_out < 2``.
    """
    if not req.ok or req.n_out < 2:
        return None
    return (req.t_last_ns - req.t_first_ns) / NS_PER_S / (req.n_out - 1)


def e2e_latency_s(req: RequestRow) -> float | None:
    """End-to-end latency: ``t_last - t_send``."""
    if not req.ok:
        return None
    return (req.t_last_ns - req.t_send_ns) / NS_PER_S


def itl_s(req: RequestRow) -> list[float]:
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


def pooled_itl_s(reqs: Iterable[RequestRow]) -> list[float]:
    """ITL pooled over requests: the concatenation of every request's ``itl_s`` (token-weighted)."""
    out: list[float] = []
    for req in reqs:
        out.extend(itl_s(req))
    return out


# --- a wave of a batch workload -------------------------------------------------------------


def decode_tok_s(tokens: int, window_s: float) -> float | None:
    """Aggregate decode throughput: ``decode_tok_s = tokens generated inside the window / window length``.

    Over several waves byog uses the ratio of sums (sum of tokens / sum of window lengths), so
    a wave weighs by its window length.
    """
    return tokens / window_s if window_s > 0 else None


def decode_step_s(window_s: float, steps: float) -> float | None:
    """Decode step time: ``decode_step_s = window length / decode steps in it``."""
    return window_s / steps if steps > 0 else None


# How far the cross-check may be from what it predicts (docs/metrics.md, "Speculative decoding"):
# |crosscheck_ratio / (acceptance_length / tokens_per_request_step) - 1| <= this. The prediction's
# tokens per request-step come from the server's counters over the measured waves (prefill and tail
# steps included), the ratio's from the decode window; measured on the CPU default (smoke-spec):
# 1.9-11.7 % at B <= 4, from acceptance that differs between the requests of a wave.
CROSSCHECK_TOLERANCE = 0.15


def crosscheck_decode_tok_s(steps_per_s: float, acceptance_length: float, batch_size: int) -> float:
    """The speculative-decoding conversion: ``decode tok/s = steps/s x acceptance length x B``.

    It equals the measured ``decode_tok_s`` when every request gains ``acceptance_length`` tokens
    in every step, i.e. every decode step carried a draft (``draft_coverage`` = 1, as under
    synthetic acceptance). With drafts on some steps only (ngram finds no match) the ratio
    crosscheck / measured is ``acceptance_length / tokens_per_request_step`` > 1.
    """
    return steps_per_s * acceptance_length * batch_size


# --- whole point ----------------------------------------------------------------------------


def output_tok_s(reqs: Sequence[RequestRow]) -> float | None:
    """Output throughput over the point: ``sum n_out / (max t_last - min t_send)`` (prefill included).

    vLLM bench serve's "Output token throughput" (it divides by the whole benchmark duration).
    """
    done = [r for r in reqs if r.ok]
    if not done:
        return None
    span = (max(r.t_last_ns for r in done) - min(r.t_send_ns for r in reqs)) / NS_PER_S
    return sum(r.n_out for r in done) / span if span > 0 else None


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


def acceptance_length_ci(
    accepted_per_pos: Sequence[float], drafts: float, z: float = 1.96
) -> tuple[float, float] | None:
    """Normal-approximation CI of AL from the per-position counters: ``AL +- z x sqrt(Var(X) / drafts)``.

    X = draft tokens accepted in one draft. vLLM accepts a prefix (position i only after 1..i-1),
    so ``P(X >= i) = a_i`` and ``E[X] = sum a_i``, ``E[X^2] = sum (2i - 1) a_i``. Treats drafts
    as independent trials: acceptance correlates within a request and a prompt, so this CI says
    how well the drafts measured pin AL for *these* prompts, not across prompts.
    """
    if drafts <= 0 or not accepted_per_pos:
        return None
    rates = [a / drafts for a in accepted_per_pos]
    mean_x = math.fsum(rates)
    mean_x2 = math.fsum((2 * i - 1) * a for i, a in enumerate(rates, start=1))
    half = z * math.sqrt(max(mean_x2 - mean_x * mean_x, 0.0) / drafts)
    return 1.0 + mean_x - half, 1.0 + mean_x + half


def wilson_interval(successes: float, trials: float, z: float = 1.96) -> tuple[float, float] | None:
    """Wilson score interval of a proportion ``successes / trials`` (stays inside [0, 1], sane at 0 and 1)."""
    if trials <= 0:
        return None
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def request_steps(generated: float, accepted: float) -> float:
    """Decode steps summed over requests: ``generated - accepted``.

    Every step emits exactly one token per request that the target model sampled itself (the
    bonus or correcting token) plus the accepted draft tokens, so the non-draft tokens count the
    (request, step) pairs.
    """
    return generated - accepted


def draft_coverage(drafts: float, generated: float, accepted: float) -> float | None:
    """Share of (request, step) pairs that carried a draft: ``drafts / (generated - accepted)``.

    1 under synthetic acceptance with a proposer that always drafts; below 1 when ngram finds no
    match (then vLLM counts no draft for that step).
    """
    steps = request_steps(generated, accepted)
    return drafts / steps if steps > 0 else None


def tokens_per_request_step(generated: float, accepted: float) -> float | None:
    """What a request gains per step, drafted or not: ``generated / (generated - accepted)``.

    ``= 1 + (AL - 1) x draft_coverage``; equals AL when every step carried a draft.
    """
    steps = request_steps(generated, accepted)
    return generated / steps if steps > 0 else None


# --- the same formulas over many requests at once (RequestColumns) ---------------------------
# Where a per-request formula above exists, its column form applies it to every request of a
# column set with the same floating-point operations (int64 differences, then float64 divisions
# that IEEE rounds exactly as Python's int/int and float/int do for values below 2**53), so the
# numbers are bit for bit the same; the wave formulas exist only as columns (their per-request
# twins are the tests' oracle, tests/support/metrics_oracle.py). verify's recompute of a 25 MB
# bundle needs them to be fast.


def ttft_s_columns(c: RequestColumns) -> np.ndarray:
    """``ttft_s`` of every ok request, in request order."""
    ok = c.ok
    ttft: np.ndarray = (c.first_ns[ok] - c.t_send_ns[ok]) / NS_PER_S
    return ttft


def tpot_s_columns(c: RequestColumns) -> np.ndarray:
    """``tpot_s`` of every ok request with n_out >= 2, in request order."""
    keep = c.ok & (c.n_out >= 2)
    tpot: np.ndarray = (c.last_ns[keep] - c.first_ns[keep]) / NS_PER_S / (c.n_out[keep] - 1)
    return tpot


def e2e_latency_s_columns(c: RequestColumns) -> np.ndarray:
    ok = c.ok
    e2e: np.ndarray = (c.last_ns[ok] - c.t_send_ns[ok]) / NS_PER_S
    return e2e


def itl_parts(c: RequestColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gap / k per contributing chunk, k per contributing chunk, owning request per contributing chunk)."""
    counts = c.counts
    owner = np.repeat(np.arange(len(c)), counts)
    position = np.arange(c.chunk_t_ns.size) - np.repeat(c.offsets[:-1], counts)
    gaps = np.zeros(c.chunk_t_ns.size, dtype=np.int64)
    gaps[1:] = c.chunk_t_ns[1:] - c.chunk_t_ns[:-1]
    keep = (position > 0) & c.ok[owner] & (c.chunk_tokens > 0)
    k = c.chunk_tokens[keep]
    return gaps[keep] / NS_PER_S / k, k, owner[keep]


def itl_s_columns(c: RequestColumns) -> np.ndarray:
    """``pooled_itl_s`` of the requests: every chunk's gap / k, k times, in request and chunk order."""
    values, k, _ = itl_parts(c)
    return np.repeat(values, k)


def itl_mean_s_columns(c: RequestColumns) -> list[float]:
    """Per-request mean ITL of every request that has ITL values: ``(t_last - t_first) / (n_out - k_first)``,
    k_first = tokens of the first chunk (math.fsum per request: exact). Equals TPOT when the first chunk
    carries one token (the usual case)."""
    values, k, owner = itl_parts(c)
    if values.size == 0:
        return []
    repeated = np.repeat(values, k).tolist()  # grouped by request: owner never decreases
    per_request = np.bincount(owner, weights=k, minlength=len(c)).astype(np.int64)
    out, start = [], 0
    for n in per_request[per_request > 0].tolist():
        out.append(math.fsum(repeated[start : start + n]) / n)
        start += n
    return out


def steps_in_window_columns(wave: RequestColumns, window: tuple[int, int]) -> float:
    """Engine steps inside a wave's decode window, counted by the client: the mean over the wave's
    requests of the chunks arriving in ``(start, end]``.

    vLLM streams what one engine step produced for a request (one token, or 1 + accepted draft
    tokens) as one SSE event, and inside the window every request takes part in every step, so
    each request's chunk count is the step count. Independent of the acceptance length. vLLM
    merges two steps into one event only when its API server falls behind (on the H200 at B = 64:
    1 merged chunk in 65,536 tokens), which would make this count low.
    """
    if len(wave) == 0:
        return 0.0
    return int(in_window_columns(wave, window)[1].sum()) / len(wave)


def decode_window_ns_columns(wave: RequestColumns) -> tuple[int, int] | None:
    """Decode window of a wave: ``[max_r t_first_r, min_r t_last_r]``.

    Inside it every request of the wave has had its first token and none has finished, so the
    server decodes the whole batch and does no prefill of this wave. ``None`` when a request
    failed or the window is empty (some request finished before another one started).
    """
    if len(wave) == 0 or not bool(wave.ok.all()):
        return None
    start = int(wave.first_ns.max())
    end = int(wave.last_ns.min())
    return (start, end) if end > start else None


def tokens_in_window_columns(wave: RequestColumns, window: tuple[int, int]) -> int:
    """Output tokens generated inside the window: tokens of chunks arriving in ``(start, end]``.

    A chunk's tokens were generated since the previous chunk, so the chunk arriving exactly at
    ``start`` (the last request's first token, i.e. its prefill) is excluded and the chunk at
    ``end`` included.
    """
    return int(in_window_columns(wave, window)[0].sum())


def in_window_columns(wave: RequestColumns, window: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per request of the wave: (output tokens, chunks) of its chunks arriving in ``(start, end]``.

    The per-request parts of ``tokens_in_window_columns`` and ``steps_in_window_columns`` (int64:
    their sums are exact), for tables that keep one row per request.
    """
    start, end = window
    inside = (wave.chunk_t_ns > start) & (wave.chunk_t_ns <= end)
    owner = np.repeat(np.arange(len(wave)), wave.counts)
    tokens = np.bincount(owner[inside], weights=wave.chunk_tokens[inside], minlength=len(wave)).astype(np.int64)
    chunks = np.bincount(owner[inside], minlength=len(wave)).astype(np.int64)
    return tokens, chunks


def output_tok_s_columns(c: RequestColumns) -> float | None:
    ok = c.ok
    if not bool(ok.any()):
        return None
    span = (int(c.last_ns[ok].max()) - int(c.t_send_ns.min())) / NS_PER_S
    return int(c.n_out[ok].sum()) / span if span > 0 else None


def achieved_concurrency_columns(c: RequestColumns, start_ns: int, end_ns: int) -> float | None:
    """Time-weighted mean number of requests in flight over ``[start, end]``.

    A request is in flight from ``t_send`` to ``t_last`` (its last token). Equals the target
    C of a closed loop that keeps C requests busy.
    """
    if end_ns <= start_ns:
        return None
    t_end = np.where(c.ok, c.last_ns, c.t_send_ns)
    lo = np.maximum(c.t_send_ns, start_ns)
    hi = np.minimum(t_end, end_ns)
    busy = int(np.maximum(hi - lo, 0).sum())
    return busy / (end_ns - start_ns)


# --- distributions --------------------------------------------------------------------------


def _finite_array(values: Floats) -> np.ndarray:
    data = np.asarray(values if isinstance(values, np.ndarray) else [v for v in values if v is not None], dtype=float)
    finite: np.ndarray = data[np.isfinite(data)]
    return finite


def percentiles(values: Floats, qs: Sequence[float]) -> list[float | None]:
    """The qs-th percentiles (0-100): linear interpolation between order statistics.

    Computed by ``numpy.percentile`` (default method), the estimator vLLM bench serve uses;
    one partial sort serves every q.
    """
    data = _finite_array(values)
    if data.size == 0:
        return [None for _ in qs]
    return [float(x) for x in np.percentile(data, list(qs))]


def percentile(values: Floats, q: float) -> float | None:
    """The q-th percentile (0-100); see ``percentiles``."""
    return percentiles(values, [q])[0]


def mean(values: Floats) -> float | None:
    data = _finite_array(values)
    return math.fsum(data.tolist()) / data.size if data.size else None


def latency_stats(values: Floats) -> Stats:
    """mean, P50, P90, P99 of a latency (higher = slower)."""
    p50, p90, p99 = percentiles(values, (50, 90, 99))
    return {"mean": mean(values), "p50": p50, "p90": p90, "p99": p99}


def interactivity_stats(tpots_s: Floats) -> Stats:
    """tok/s/user: mean of 1/tpot, and Pq as ``1 / Pq(tpot)``.

    So P90 interactivity is the rate the slowest 10% of users get (1 / P90 of TPOT), as in the
    write-ups that quote "P90 interactivity"; it is not the 90th percentile of 1/tpot.
    """
    inv = [1.0 / t for t in tpots_s if t is not None and t > 0]
    p50, p90, p99 = (1.0 / p if p else None for p in percentiles(tpots_s, (50, 90, 99)))
    return {"mean": mean(inv), "p50": p50, "p90": p90, "p99": p99}
