"""The cross-check's late-read detector: a stream whose first or last token was read late is named,
and the TPOT it moves is what it names (byog's TPOT against the server's own, bench/crosscheck.py)."""

from __future__ import annotations

from byog.analysis.metrics import tpot_s
from byog.bench.crosscheck import late_reads
from byog.schemas.bench import RequestRow

STEP_NS = 50_000_000  # one decode step: 50 ms
N_OUT = 32


def _row(times: list[int], tokens: list[int] | None = None) -> RequestRow:
    tokens = tokens or [1] * len(times)
    return RequestRow(
        request_index=0,  # late_reads names a request by its place in the list
        wave=-1,
        warmup=False,
        expected_n_in=32,
        chunk_tokens=tokens,
        chunk_t_ns=times,
        n_in=32,
        n_out=sum(tokens),
    )


def _steady() -> list[int]:
    return [STEP_NS * (i + 1) for i in range(N_OUT)]


def test_a_steady_stream_reads_on_time() -> None:
    assert late_reads([_row(_steady())]) == []


def test_a_first_token_read_late_is_named_and_is_what_shortens_the_tpot() -> None:
    stall_ns = 8 * STEP_NS  # the client read nothing for 8 steps: tokens 1-9 came in one burst
    read_ns = STEP_NS + stall_ns
    times = [read_ns + i * 10_000 for i in range(9)] + _steady()[9:]
    (reason,) = late_reads([_row(times)])
    assert reason == "request 0: its second token came 0.01 ms after the first"
    short = tpot_s(_row(_steady())) - tpot_s(_row(times))  # type: ignore[operator]
    assert abs(short - stall_ns / 1e9 / (N_OUT - 1)) < 1e-9


def test_a_first_chunk_the_server_merged_is_named() -> None:
    times = _steady()[8:]  # the front end sent tokens 1-9 as one chunk
    (reason,) = late_reads([_row(times, [9] + [1] * (len(times) - 1))])
    assert reason == "request 0: its first chunk carried 9 tokens"


def test_a_last_token_read_late_is_named_whether_it_came_after_a_stall_or_in_a_burst() -> None:
    merged = _steady()[:-4] + [_steady()[-1] + STEP_NS]  # the front end stalled, then sent 4 tokens at once
    (reason,) = late_reads([_row(merged, [1] * (len(merged) - 1) + [4])])
    assert reason == "request 0: its last token came 250.00 ms after the one before (median gap 50.0 ms)"
    read_ns = _steady()[-1] + 3 * STEP_NS  # the client stalled: it read the last 4 tokens at once
    burst = _steady()[:-4] + [read_ns + i * 10_000 for i in range(4)]
    (reason,) = late_reads([_row(burst)])
    assert reason == "request 0: its last token came 0.01 ms after the one before (median gap 50.0 ms)"
    long = tpot_s(_row(burst)) - tpot_s(_row(_steady()))  # type: ignore[operator]
    assert abs(long - (3 * STEP_NS + 30_000) / 1e9 / (N_OUT - 1)) < 1e-9


def test_a_request_read_almost_whole_from_a_buffer_is_judged_by_the_runs_gaps() -> None:
    read_ns = _steady()[-1] + STEP_NS  # the client stalled from token 5 on: the rest came in one read
    buffered = _steady()[:4] + [read_ns] * (N_OUT - 4)
    reasons = late_reads([_row(_steady()), _row(buffered)])
    assert reasons == ["request 1: its last token came 0.00 ms after the one before (median gap 50.0 ms)"]
