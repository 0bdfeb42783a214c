"""What a Mooncake-format trace holds (requests, sessions, turns, lengths, span): what the shipped
sample's PROVENANCE.md states, and tests/unit/bench/test_traces.py holds it to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from byog.bench.traces import MooncakeRequest, link_sessions


def trace_stats(rows: Sequence[MooncakeRequest]) -> dict[str, Any]:
    """What a trace holds: requests, sessions, turns, lengths, span (for docs and the sample's README)."""
    turns = link_sessions(rows)
    sessions: dict[int, int] = {}
    for t in turns:
        sessions[t.session] = sessions.get(t.session, 0) + 1
    return {
        "requests": len(rows),
        "sessions": len(sessions),
        "multi_turn_sessions": sum(1 for n in sessions.values() if n > 1),
        "max_turns": max(sessions.values()),
        "span_s": (max(r.timestamp for r in rows) - min(r.timestamp for r in rows)) / 1000,
        "input_mean": sum(r.input_length for r in rows) / len(rows),
        "output_mean": sum(r.output_length for r in rows) / len(rows),
        "reusable_block_share": sum(t.reusable_blocks for t in turns) / sum(len(r.hash_ids) for r in rows),
    }
