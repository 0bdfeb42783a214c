"""Per-session metrics of multi-turn (agentic) points: TTFT by turn, prefix-cache hit rate, session time.

Why: in agent traffic each turn resends the whole context, so what matters beyond TPOT is how
much of that context the server reuses (prefix-cache hits shorten the prefill, i.e. TTFT) and
how long a whole session takes. Pure functions of the per-turn raw rows' numbers.

- ``ttft_by_turn``: TTFT grouped by the turn's index within its session (0 = the first prompt);
- ``prefix_hit_rate = sum cached_tokens / sum prompt_tokens`` over turns whose server reported
  ``usage.prompt_tokens_details.cached_tokens`` (vLLM: ``--enable-prompt-tokens-details``),
  token-weighted like vLLM's own ``vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total``
  (``counter_hit_rate``, from the /metrics deltas around the point);
- ``reusable_share = sum reusable_tokens / sum prompt_tokens``: the share of prompt tokens the
  server had already seen (earlier prompts and answers of the point), i.e. the hit rate of an
  unbounded cache with one-token blocks; a real cache hits at most this (whole blocks only);
- ``session_s = t_last(last turn) - t_send(first turn)`` per session, think times included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from byog.analysis import metrics
from byog.schemas.bench import Percentiles, RequestRow, SessionSummary, TurnLatency

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class TurnFacts:
    """What the session formulas need from one turn's raw row."""

    session: int
    agent: int  # 0 = the session's main agent; 1.. = its sub-agents in fork order
    turn: int  # index within its agent's sequence of turns
    ok: bool
    ttft_s: float | None
    n_in: int | None  # the server's usage.prompt_tokens
    cached_tokens: int | None  # the server's usage.prompt_tokens_details.cached_tokens (None: not reported)
    reusable_tokens: int  # prompt tokens the server had seen before this turn (client-side bookkeeping)
    t_send_ns: int
    t_last_ns: int | None  # arrival of the last token (None: failed)


def ttft_by_turn(turns: Iterable[TurnFacts], agent: int | None = 0) -> dict[int, list[float]]:
    """TTFTs grouped by turn index (main agent only by default; ``agent=None`` pools every agent)."""
    out: dict[int, list[float]] = {}
    for t in turns:
        if t.ttft_s is not None and (agent is None or t.agent == agent):
            out.setdefault(t.turn, []).append(t.ttft_s)
    return dict(sorted(out.items()))


def prefix_hit_rate(turns: Iterable[TurnFacts]) -> float | None:
    """``sum cached_tokens / sum n_in`` over successful turns that report cached tokens; ``None`` if none do."""
    cached = prompt = 0
    for t in turns:
        if t.ok and t.cached_tokens is not None and t.n_in:
            cached += t.cached_tokens
            prompt += t.n_in
    return cached / prompt if prompt else None


def counter_hit_rate(hits_delta: float | None, queries_delta: float | None) -> float | None:
    """``Δ vllm:prefix_cache_hits_total / Δ vllm:prefix_cache_queries_total`` (tokens), around the point."""
    if hits_delta is None or not queries_delta:
        return None
    return hits_delta / queries_delta


def reusable_share(turns: Iterable[TurnFacts]) -> float | None:
    """``sum reusable_tokens / sum n_in``: the hit rate of an ideal cache (upper bound of ``prefix_hit_rate``)."""
    reusable = prompt = 0
    for t in turns:
        if t.ok and t.n_in:
            reusable += min(t.reusable_tokens, t.n_in)
            prompt += t.n_in
    return reusable / prompt if prompt else None


def session_seconds(turns: Sequence[TurnFacts]) -> list[float]:
    """Per session whose turns all succeeded: ``last t_last - first t_send`` (sub-agents and pauses included)."""
    spans: dict[int, list[int]] = {}
    broken: set[int] = set()
    for t in turns:
        if not t.ok or t.t_last_ns is None:
            broken.add(t.session)
            continue
        lo_hi = spans.setdefault(t.session, [t.t_send_ns, t.t_last_ns])
        lo_hi[0] = min(lo_hi[0], t.t_send_ns)
        lo_hi[1] = max(lo_hi[1], t.t_last_ns)
    return [(hi - lo) / NS_PER_S for s, (lo, hi) in sorted(spans.items()) if s not in broken]


# --- one agentic point ---------------------------------------------------------------------------


def turn_facts(row: RequestRow) -> TurnFacts:
    """The facts of one turn's raw row."""
    return TurnFacts(
        session=row.session if row.session is not None else row.request_index,
        agent=row.agent or 0,
        turn=row.turn or 0,
        ok=row.ok,
        ttft_s=metrics.ttft_s(row),
        n_in=row.n_in,
        cached_tokens=row.cached_tokens,
        reusable_tokens=row.reusable_tokens or 0,
        t_send_ns=row.t_send_ns,
        t_last_ns=row.t_last_ns if row.ok else None,
    )


def session_summary(
    rows: Sequence[RequestRow], hits_delta: float | None = None, queries_delta: float | None = None
) -> SessionSummary:
    """The per-session block of an agentic point, over its measured (non-warm-up) turns."""
    facts = [turn_facts(r) for r in rows if not r.warmup]
    sub = [f.ttft_s for f in facts if f.agent > 0 and f.ttft_s is not None]
    prompts = [float(f.n_in) for f in facts if f.ok and f.n_in]
    return SessionSummary(
        sessions=len({f.session for f in facts}),
        sessions_complete=len(session_seconds(facts)),
        turns=len(facts),
        subagent_turns=sum(1 for f in facts if f.agent > 0),
        ttft_s_by_turn=[
            TurnLatency(turn=k, n=len(v), **metrics.latency_stats(v)) for k, v in ttft_by_turn(facts).items()
        ],
        ttft_s_subagent=Percentiles(**metrics.latency_stats(sub)),
        prompt_tokens=Percentiles(**metrics.latency_stats(prompts)),
        prefix_hit_rate=prefix_hit_rate(facts),
        prefix_hit_rate_counters=counter_hit_rate(hits_delta, queries_delta),
        reusable_share=reusable_share(facts),
        session_s=Percentiles(**metrics.latency_stats(session_seconds(facts))),
    )
