"""Mooncake trace import: the format, the shipped sample, sessions from hash prefixes, block prompts, scaling."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from byog.bench.traces import (
    SAMPLES,
    BlockTokens,
    MooncakeRequest,
    link_sessions,
    read_trace,
    replay_requests,
    sample_sessions,
    scaled_input_length,
    scaled_output_length,
)
from byog.core.errors import UsageError
from byog.schemas.plan import TraceSource
from tests.support.traces import trace_stats

SAMPLE = SAMPLES["mooncake-conversation-sample"]


def R(ts: int, n_in: int, n_out: int, ids: list[int]) -> MooncakeRequest:
    return MooncakeRequest(timestamp=ts, input_length=n_in, output_length=n_out, hash_ids=ids)


def test_the_shipped_sample_is_the_documented_cut_with_its_licence() -> None:
    rows = read_trace("mooncake-conversation-sample")
    stats = trace_stats(rows)
    assert (stats["requests"], stats["sessions"], stats["multi_turn_sessions"], stats["max_turns"]) == (130, 65, 28, 8)
    assert stats["span_s"] == 1662.0 and round(stats["input_mean"]) == 13738 and round(stats["output_mean"]) == 393
    # the cut is reproducible: re-cutting the sample by the same rule keeps every line
    assert sample_sessions(rows, 20.0) == list(range(130))
    folder = SAMPLE.parent
    assert "Apache License" in (folder / "LICENSE").read_text().splitlines()[1]
    readme = (folder / "PROVENANCE.md").read_text()
    assert "3b5a594133958449a1feaf1c9e0fc1b553e34a28" in readme and "Apache License 2.0" in readme
    assert len(hashlib.sha256(SAMPLE.read_bytes()).hexdigest()) == 64


def test_bad_lines_are_refused_with_their_line_number(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n'
        '{"timestamp": 5, "input_length": 600, "output_length": 5, "hash_ids": [1]}\n'
    )
    with pytest.raises(UsageError, match=r"t.jsonl:2: input_length 600 needs 2 hash ids"):
        read_trace(path)
    path.write_text('{"timestamp": 0, "input_length": 6, "output_length": 5, "hash_ids": [1], "text_input": "hi"}\n')
    with pytest.raises(UsageError, match=r"t.jsonl:1 is not a Mooncake trace line"):
        read_trace(path)
    with pytest.raises(UsageError, match="neither a shipped sample"):
        read_trace(tmp_path / "missing.jsonl")


def test_sessions_follow_the_longest_shared_hash_prefix() -> None:
    rows = [
        R(0, 1500, 10, [0, 1, 2]),  # session A, turn 0
        R(0, 1100, 10, [0, 5, 6]),  # session B: shares only the system block 0 with A
        R(9, 2000, 10, [0, 1, 2, 3]),  # A turn 1: A's prompt + more
        R(9, 2600, 10, [0, 1, 2, 3, 4, 9]),  # A turn 2
        R(9, 1100, 10, [0, 5, 7]),  # B turn 1: shares [0, 5] with B
    ]
    turns = link_sessions(rows)
    assert [(t.session, t.turn) for t in turns] == [(0, 0), (1, 0), (0, 1), (0, 2), (1, 1)]
    # earlier lines' blocks, and those of lines arriving at the same instant (served in either order):
    # A's first turn may find B's system block, A's turn 1 all of turn 2's first four blocks
    assert [t.reusable_blocks for t in turns] == [1, 1, 4, 4, 2]


def test_scaling_keeps_the_block_structure() -> None:
    row = R(0, 6758, 500, list(range(14)))  # 13 full blocks + 102 tokens
    assert scaled_input_length(row, 512) == 6758
    assert scaled_input_length(row, 16) == 13 * 16 + 4  # ceil(102 x 16 / 512) = 4
    assert scaled_output_length(row, 16 / 512) == 16 and scaled_output_length(R(0, 1, 1, [0]), 0.01) == 1


def test_equal_hash_ids_become_equal_tokens_so_the_prefix_cache_can_hit() -> None:
    blocks = BlockTokens(16, vocab_size=1000, seed=3)
    a, b, c = (blocks.prompt(r) for r in (R(0, 1500, 1, [0, 1, 2]), R(0, 1100, 1, [0, 1, 7]), R(0, 1100, 1, [4, 1, 2])))
    assert len(a) == 47 and len(b) == 35  # 2 x 16 + ceil(476 x 16 / 512) = 15; 2 x 16 + ceil(76 x 16 / 512) = 3
    assert a[:32] == b[:32] and a[32:35] != b[32:35]  # same first two ids: same first 32 tokens
    assert a[:16] != c[:16] and a[16:32] == c[16:32]  # the same id is the same block wherever it sits
    assert BlockTokens(16, 1000, seed=3).prompt(rows_first := R(0, 1500, 1, [0, 1, 2])) == a  # seeded
    assert BlockTokens(16, 1000, seed=4).prompt(rows_first) != a


def test_replay_requests_follow_the_schedule_and_skip_what_does_not_fit() -> None:
    source = TraceSource(trace="mooncake-conversation-sample", block_tokens=16, max_requests=40)
    requests, skipped = replay_requests(source, speedup=10.0, seed=0, max_context=2048, vocab_size=49152)
    assert len(requests) == 40 and skipped >= 1  # the longest prompts do not fit 2,048 tokens even scaled by 1/32
    offsets = [r.offset_s for r in requests]
    assert offsets[0] == 0.0 and offsets == sorted(offsets)
    assert all(len(r.prompt) + r.osl <= 2048 for r in requests)
    rows = read_trace("mooncake-conversation-sample")
    first = min(range(len(rows)), key=lambda i: (rows[i].timestamp, i))
    assert len(requests[0].prompt) == scaled_input_length(rows[first], 16)
    assert requests[0].osl == scaled_output_length(rows[first], 16 / 512)
    # every request of the trace starts with the same system block, so every prompt shares 16 tokens
    assert len({tuple(r.prompt[:16]) for r in requests}) == 1
    # whole sessions: the first 3 sessions' every turn, later turns minutes after their first
    sessions, _ = replay_requests(TraceSource(block_tokens=16, max_sessions=3), 1.0, 0, 2048, 49152)
    assert len({r.turn.session for r in sessions}) == 3 and max(r.turn.turn for r in sessions) >= 1
    assert len(sessions) == sum(
        1
        for t in link_sessions(read_trace("mooncake-conversation-sample"))
        if t.session in {r.turn.session for r in sessions}
    )
    # another point (another key) replays the same structure with other tokens: no cross-point cache hits
    other, _ = replay_requests(source, speedup=10.0, seed=0, max_context=2048, vocab_size=49152, key="trace-x20")
    assert [len(r.prompt) for r in other] == [len(r.prompt) for r in requests] and other[0].prompt[:16] != requests[
        0
    ].prompt[:16]
