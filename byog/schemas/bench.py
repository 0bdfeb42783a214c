"""The bench's raw files: a point record (``bench/<server>/<point>.json``) and its rows (``.parquet``).

Both are raw: summaries are derived from them. The row model lists the parquet columns; the
client writes them (``byog.bench.rows``) and verify validates each row against this model.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from byog.plans.expand import BenchPoint
from byog.schemas.registry import register

BENCH_SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClientLoad(_Strict):
    """How busy the load generator itself was while it measured (client saturation check)."""

    cpu_share: Optional[float] = None  # client process CPU seconds / wall seconds (1.0 = one core)
    loop_lag_p99_s: Optional[float] = None  # event-loop lag: how late a periodic timer woke up
    loop_lag_max_s: Optional[float] = None
    cpu_share_limit: float
    # lag limit = max(floor, share x the point's median ITL): a late read shifts a token's timestamp
    loop_lag_share_of_itl: float
    loop_lag_floor_s: float


class PointRecord(_Strict):
    """Written after the rows, atomically; ``status: failed`` (and no rows) makes a rerun retry it."""

    schema_version: Literal[1] = BENCH_SCHEMA_VERSION
    server: str
    point: BenchPoint
    prompts_label: str  # "random-ids" or "dataset:<name>": results on random tokens are labelled so
    status: Literal["complete", "failed"]
    error: Optional[str] = None
    log_tail: Optional[str] = None
    started_at: str  # UTC, ISO 8601
    duration_s: float  # wall time of the point, warm-up included
    t_start_ns: int  # perf_counter_ns when the first request was sent (warm-up included)
    t_end_ns: int
    client: Optional[ClientLoad] = None
    counter_deltas: dict[str, Union[float, list[float]]] = Field(default_factory=dict)  # /metrics after - before
    prefix_cache_reset: Optional[bool] = None  # None: not asked; False: the server refused
    byog_version: str


class BenchRow(_Strict):
    """One request (one parquet row). Timestamps are ``time.perf_counter_ns`` of the client process."""

    request_index: int
    wave: int  # batch: 0..W+R-1 (warm-up waves first); other workloads: -1
    warmup: bool
    expected_n_in: int  # prompt tokens the server should count (ISL for completions)
    t_send_ns: int
    chunk_t_ns: list[int]  # arrival of each chunk that carried output tokens
    chunk_tokens: list[int]  # output tokens each of those chunks carried (usage deltas)
    n_in: Optional[int] = None  # the server's usage.prompt_tokens
    n_out: int  # the server's usage.completion_tokens
    error: Optional[str] = None
    usage_per_chunk: bool  # False: the server streamed chunks without usage (counts guessed)


ROW_COLUMNS: tuple[str, ...] = tuple(BenchRow.model_fields)


def point_record_json(record: PointRecord) -> dict[str, Any]:
    return record.model_dump(mode="json")


register("bench_point", PointRecord, version=BENCH_SCHEMA_VERSION, files=("bench/*/*.json",))
register("bench_row", BenchRow, version=BENCH_SCHEMA_VERSION, files=("bench/*/*.parquet",), kind="parquet")
