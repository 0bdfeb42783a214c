"""The two request bodies (byog's and vLLM's) and how validity reads rows that counted tokens by chunk."""

from __future__ import annotations

from byog.analysis.validity import invalid_reasons
from byog.bench.client import request_body
from byog.schemas.bench import BenchPoint, PointRecord, RequestRow
from byog.schemas.plan import RandomPrompts


def test_byog_body_asks_for_exact_counts_and_vllm_body_is_vllm_bench_serves() -> None:
    byog = request_body("completions", "m", [5, 6], 8)
    assert byog["min_tokens"] == 8 and byog["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    vllm = request_body("completions", "m", [5, 6], 8, style="vllm")
    assert "min_tokens" not in vllm and vllm["stream_options"] == {"include_usage": True}
    assert {k: vllm[k] for k in ("max_tokens", "ignore_eos", "temperature", "stream", "prompt")} == {
        "max_tokens": 8,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "prompt": [5, 6],
    }
    assert "min_tokens" not in request_body("completions", "m", [5], 8, extra={"min_tokens": None})


def _record(style: str, rows: list[RequestRow]) -> tuple[PointRecord, list[RequestRow]]:
    point = BenchPoint(
        point_id="p",
        workload="w",
        kind="batch",
        batch_size=1,
        isl=2,
        osl=4,
        prompts=RandomPrompts(),
        waves=1,
        request_body=style,
    )  # type: ignore[arg-type]
    record = PointRecord(
        server="s",
        point=point,
        prompts_label="random-ids",
        status="complete",
        started_at="t",
        duration_s=1.0,
        t_start_ns=0,
        t_end_ns=1,
        byog_version="x",
    )
    return record, rows


def _row(chunk_tokens: list[int], usage_per_chunk: bool) -> RequestRow:
    times = [10 * (i + 1) for i in range(len(chunk_tokens))]
    return RequestRow(
        request_index=0,
        wave=0,
        warmup=False,
        expected_n_in=2,
        t_send_ns=1,
        chunk_t_ns=times,
        chunk_tokens=chunk_tokens,
        n_in=2,
        n_out=4,
        usage_per_chunk=usage_per_chunk,
    )


def test_vllm_body_counts_one_token_per_chunk_and_is_flagged_only_when_that_is_wrong() -> None:
    ok = invalid_reasons(*_record("vllm", [_row([1, 1, 1, 1], usage_per_chunk=False)]))
    assert ok == []
    wrong = invalid_reasons(*_record("vllm", [_row([1, 1], usage_per_chunk=False)]))  # 2 chunks, server says 4 tokens
    assert any("counted one token per chunk" in r for r in wrong)
    byog = invalid_reasons(*_record("byog", [_row([1, 1, 1, 1], usage_per_chunk=False)]))
    assert any("did not report usage on every chunk" in r for r in byog)
