"""The server's Prometheus ``/metrics``: parse a snapshot, take counter deltas around a point.

Snapshots are stored verbatim (``servers/<name>/metrics-<point>-{before,after}.prom``) so the
deltas below can be recomputed from the run directory.
"""

from __future__ import annotations

import re
from typing import Any

# The counters a point reads (summed over every label set, i.e. over engines).
GENERATION_TOKENS = "vllm:generation_tokens_total"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits_total"
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries_total"
PROMPT_TOKENS_CACHED = "vllm:prompt_tokens_cached_total"
ITERATIONS = "vllm:iteration_tokens_total_count"  # histogram count = engine steps
SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
SPEC_ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
PREEMPTIONS = "vllm:num_preemptions_total"
# The server's own timing of what it generated (histogram sum and count: mean = dsum / dcount):
# TPOT per finished request and the gap between consecutive output tokens, as the engine saw them.
SERVER_TPOT_SUM = "vllm:request_time_per_output_token_seconds_sum"
SERVER_TPOT_COUNT = "vllm:request_time_per_output_token_seconds_count"
SERVER_ITL_SUM = "vllm:inter_token_latency_seconds_sum"
SERVER_ITL_COUNT = "vllm:inter_token_latency_seconds_count"

COUNTERS = (
    GENERATION_TOKENS,
    PROMPT_TOKENS,
    PREFIX_CACHE_HITS,
    PREFIX_CACHE_QUERIES,
    PROMPT_TOKENS_CACHED,
    ITERATIONS,
    SPEC_DRAFTS,
    SPEC_DRAFT_TOKENS,
    SPEC_ACCEPTED,
    PREEMPTIONS,
    SERVER_TPOT_SUM,
    SERVER_TPOT_COUNT,
    SERVER_ITL_SUM,
    SERVER_ITL_COUNT,
)

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Samples of a Prometheus text exposition: (name, labels, value)."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            continue
        name, labels, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        samples.append((name, dict(_LABEL.findall(labels or "")), number))
    return samples


def counter_totals(text: str) -> dict[str, Any]:
    """The counters byog reads, summed over label sets; per-position acceptance as a list.

    A counter the server does not export is absent (not 0): "not measured" differs from "zero".
    """
    out: dict[str, Any] = {}
    per_pos: dict[int, float] = {}
    for name, labels, value in parse_prometheus(text):
        if name in COUNTERS:
            out[name] = out.get(name, 0.0) + value
        elif name == SPEC_ACCEPTED_PER_POS and "position" in labels:
            pos = int(labels["position"])
            per_pos[pos] = per_pos.get(pos, 0.0) + value
    if per_pos:
        out[SPEC_ACCEPTED_PER_POS] = [per_pos[i] for i in sorted(per_pos)]
    return out


def counter_deltas(before: str | None, after: str | None) -> dict[str, Any]:
    """``after - before`` for every counter present in both snapshots."""
    if before is None or after is None:
        return {}
    b, a = counter_totals(before), counter_totals(after)
    out: dict[str, Any] = {}
    for name in a:
        if name not in b:
            continue
        if isinstance(a[name], list):
            if len(a[name]) == len(b[name]):
                out[name] = [x - y for x, y in zip(a[name], b[name], strict=True)]
        else:
            out[name] = a[name] - b[name]
    return out


def histogram_mean(deltas: dict[str, Any], sum_name: str, count_name: str) -> float | None:
    """Mean of a server histogram over a point: ``dsum / dcount`` (None when nothing was observed)."""
    total, count = deltas.get(sum_name), deltas.get(count_name)
    return total / count if isinstance(total, float) and isinstance(count, float) and count > 0 else None


def sum_deltas(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Counter deltas of several windows added up (a counter missing from any window is left out)."""
    if not parts:
        return {}
    out: dict[str, Any] = {}
    for name in set.intersection(*(set(p) for p in parts)):
        values = [p[name] for p in parts]
        if all(isinstance(v, list) for v in values):
            if len({len(v) for v in values}) == 1:
                out[name] = [sum(xs) for xs in zip(*values, strict=True)]
        elif not any(isinstance(v, list) for v in values):
            out[name] = sum(values)
    return out
