"""Replay of a public request trace in Mooncake's JSONL format (the FAST'25 traces; AIPerf's ``mooncake_trace``).

Why: a published trace carries real arrival times, real length distributions and real prefix
sharing, which no synthetic generator can claim. Mooncake (kvcache-ai/Mooncake,
``FAST25-release/traces``, Apache-2.0) publishes one request per line::

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ..., 2354]}

- ``timestamp``: arrival in milliseconds since the first request (replayed on that schedule);
- ``input_length`` / ``output_length``: tokens (no text: the trace is anonymized);
- ``hash_ids``: one id per 512-token block of the prompt (the last block may be partial), remapped
  prefix hashes: two requests with the same first k ids share their first k x 512 tokens, so a
  prefix cache can reuse them.

byog turns a line into a real prompt as AIPerf does (each hash id is a block of token ids that
depends only on the id, the last block cut to the remainder) so equal ids mean equal tokens and
the server's prefix cache hits exactly where the trace says it could. Unlike AIPerf, a block is
generated whole and cut, so a partial last block is always a prefix of the same id's full block.
``block_tokens`` scales the trace: each 512-token block becomes ``block_tokens`` tokens (the last
block proportionally), and output lengths scale by the same factor unless told otherwise, so a
CPU server with a 2,048-token context can replay the shape of a trace whose prompts average 12k.

Sessions are not in the format. byog links a request to the earlier request it shares the
longest hash prefix with (at least ``MIN_SHARED_BLOCKS`` blocks, more than the one system-prompt
block every line of the conversation trace starts with) and numbers turns along those links, so
the per-turn metrics (TTFT by turn, hit rate) apply to a trace too.
"""

from __future__ import annotations

import asyncio
import math
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
)

from byog.analysis.metrics import percentile
from byog.bench.client import StreamingClient
from byog.bench.prompts import random_token_ids
from byog.bench.workloads import LoadMonitor, PointRun
from byog.core.errors import UsageError
from byog.schemas.bench import BenchPoint, RequestRow
from byog.schemas.plan import TraceSource

MOONCAKE_BLOCK_TOKENS = 512  # the traces' block size (FAST25-release/README.md)
MIN_SHARED_BLOCKS = 2
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "datasets" / "mooncake"
SAMPLES = {"mooncake-conversation-sample": SAMPLE_DIR / "conversation_trace.sample.jsonl"}

Progress = Callable[[int], None]


class MooncakeRequest(BaseModel):
    """One line of a Mooncake trace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timestamp: NonNegativeInt = 0  # ms since the trace's first request
    input_length: PositiveInt
    output_length: PositiveInt
    hash_ids: list[NonNegativeInt] = Field(min_length=1)


def read_trace(source: str | Path) -> list[MooncakeRequest]:
    """A shipped sample by name (``mooncake-conversation-sample``) or a JSONL file; every line checked."""
    path = SAMPLES.get(str(source)) or Path(source).expanduser()
    if not path.is_file():
        raise UsageError(f"trace '{source}' is neither a shipped sample ({', '.join(SAMPLES)}) nor a file")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = MooncakeRequest.model_validate_json(line)
        except ValidationError as err:
            raise UsageError(f"{path}:{n} is not a Mooncake trace line: {err.errors()[0]['msg']}") from None
        blocks = math.ceil(row.input_length / MOONCAKE_BLOCK_TOKENS)
        if len(row.hash_ids) != blocks:
            raise UsageError(
                f"{path}:{n}: input_length {row.input_length} needs {blocks} hash ids of "
                f"{MOONCAKE_BLOCK_TOKENS} tokens, the line has {len(row.hash_ids)}"
            )
        rows.append(row)
    if not rows:
        raise UsageError(f"{path} holds no requests")
    return rows


# --- structure: sessions and what a cache could reuse -----------------------------------------


@dataclass(frozen=True)
class TraceTurn:
    index: int  # line index in the trace
    session: int  # line index of the session's first request
    turn: int  # 0 = the session's first request
    # Leading hash ids an ideal cache could hold when this request arrives: those of any earlier
    # request, or of one arriving at the same instant (a server serves simultaneous arrivals in either
    # order, so either may find the other's blocks).
    reusable_blocks: int


def _shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def link_sessions(rows: Sequence[MooncakeRequest], min_shared: int = MIN_SHARED_BLOCKS) -> list[TraceTurn]:
    """Parent = the latest earlier request sharing the longest hash prefix (>= ``min_shared`` blocks)."""
    last_with_prefix: dict[tuple[int, ...], int] = {}
    at: dict[int, list[int]] = {}  # timestamp -> lines arriving then
    for i, row in enumerate(rows):
        at.setdefault(row.timestamp, []).append(i)
    out: list[TraceTurn] = []
    for i, row in enumerate(rows):
        ids = tuple(row.hash_ids)
        shared = next((k for k in range(len(ids), 0, -1) if ids[:k] in last_with_prefix), 0)
        parent = last_with_prefix[ids[:shared]] if shared >= min_shared else None
        together = max((_shared_prefix(ids, rows[j].hash_ids) for j in at[row.timestamp] if j != i), default=0)
        reusable = max(shared, together)
        if parent is None:
            out.append(TraceTurn(i, i, 0, reusable))
        else:
            out.append(TraceTurn(i, out[parent].session, out[parent].turn + 1, reusable))
        for k in range(1, len(ids) + 1):
            last_with_prefix[ids[:k]] = i
    return out


def sample_sessions(rows: Sequence[MooncakeRequest], first_s: float) -> list[int]:
    """Line indices of every request of the sessions whose first request arrives before ``first_s``.

    How the shipped sample was cut from the full trace: whole sessions, so prefix reuse is
    complete; later turns keep their original timestamps.
    """
    turns = link_sessions(rows)
    roots = {t.session for t in turns if t.turn == 0 and rows[t.index].timestamp < first_s * 1000}
    return [t.index for t in turns if t.session in roots]


# --- scaling and prompts ----------------------------------------------------------------------


def scaled_input_length(row: MooncakeRequest, block_tokens: int) -> int:
    """``(blocks - 1) x block_tokens + ceil(last x block_tokens / 512)``, last = tokens of the partial last block."""
    full = len(row.hash_ids) - 1
    last = row.input_length - full * MOONCAKE_BLOCK_TOKENS
    return full * block_tokens + math.ceil(last * block_tokens / MOONCAKE_BLOCK_TOKENS)


def scaled_output_length(row: MooncakeRequest, output_scale: float) -> int:
    """``max(1, round(output_length x output_scale))``."""
    return max(1, math.floor(row.output_length * output_scale + 0.5))


class BlockTokens:
    """Token ids of hash blocks: block ``h`` is ``block_tokens`` ids seeded by (seed, key, h), cached.

    ``key`` is the point id in a run: two replays of one trace (two speedups) share no tokens, so a
    server's prefix cache never serves one replay from the other.
    """

    def __init__(
        self,
        block_tokens: int,
        vocab_size: int,
        seed: int,
        exclude: frozenset[int] = frozenset(),
        key: str = "mooncake",
    ) -> None:
        self.block_tokens, self.vocab_size, self.seed, self.exclude = block_tokens, vocab_size, seed, exclude
        self.key = zlib.crc32(key.encode())
        self._cache: dict[int, list[int]] = {}

    def block(self, hash_id: int) -> list[int]:
        if hash_id not in self._cache:
            seed = [self.seed, self.key, hash_id]
            self._cache[hash_id] = random_token_ids(1, self.block_tokens, self.vocab_size, seed, self.exclude)[0]
        return self._cache[hash_id]

    def prompt(self, row: MooncakeRequest) -> list[int]:
        n = scaled_input_length(row, self.block_tokens)
        ids: list[int] = []
        for h in row.hash_ids:
            ids.extend(self.block(h))
        return ids[:n]


# --- replay -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayRequest:
    offset_s: float
    prompt: list[int]
    osl: int
    turn: TraceTurn


def output_scale(source: TraceSource) -> float:
    """The given ``output_scale``, else the prompts' factor ``block_tokens / 512``."""
    return source.output_scale if source.output_scale is not None else source.block_tokens / MOONCAKE_BLOCK_TOKENS


def replay_requests(
    source: TraceSource,
    speedup: float,
    seed: int,
    max_context: int | None,
    vocab_size: int,
    exclude: frozenset[int] = frozenset(),
    key: str = "mooncake",
) -> tuple[list[ReplayRequest], int]:
    """(requests in send order, how many lines were skipped because prompt + answer exceed ``max_context``).

    The lines of the first ``max_sessions`` sessions (by first arrival; all when unset), then the
    first ``max_requests`` of them by arrival that fit; send offsets count from the first kept line.
    """
    rows = read_trace(source.trace)
    turns = link_sessions(rows)
    blocks = BlockTokens(source.block_tokens, vocab_size, seed, exclude, key)
    scale = output_scale(source)
    chosen, skipped = selected_lines(source, rows, turns, max_context)
    t0 = rows[chosen[0]].timestamp if chosen else 0
    out = [
        ReplayRequest(
            (rows[i].timestamp - t0) / 1000.0 / speedup,
            blocks.prompt(rows[i]),
            scaled_output_length(rows[i], scale),
            turns[i],
        )
        for i in chosen
    ]
    return out, skipped


def selected_lines(
    source: TraceSource, rows: Sequence[MooncakeRequest], turns: Sequence[TraceTurn], max_context: int | None = None
) -> tuple[list[int], int]:
    """The lines a replay sends, in send order, and how many were skipped as too long (see ``replay_requests``)."""
    scale = output_scale(source)
    order = sorted(range(len(rows)), key=lambda i: (rows[i].timestamp, i))
    if source.max_sessions is not None:
        roots = set(list(dict.fromkeys(turns[i].session for i in order))[: source.max_sessions])
        order = [i for i in order if turns[i].session in roots]
    chosen: list[int] = []
    skipped = 0
    for i in order:
        if source.max_requests is not None and len(chosen) >= source.max_requests:
            break
        n = scaled_input_length(rows[i], source.block_tokens) + scaled_output_length(rows[i], scale)
        if max_context is not None and n > max_context:
            skipped += 1
            continue
        chosen.append(i)
    return chosen, skipped


def reusable_tokens(request: ReplayRequest, block_tokens: int) -> int:
    return min(len(request.prompt), request.turn.reusable_blocks * block_tokens)


async def _replay(
    base_url: str,
    model: str,
    block_tokens: int,
    requests: Sequence[ReplayRequest],
    progress: Progress,
    timeout_s: float,
) -> PointRun:
    monitor = LoadMonitor()
    records = [
        RequestRow(
            request_index=k,
            wave=-1,
            warmup=False,
            expected_n_in=len(r.prompt),
            session=r.turn.session,
            agent=0,
            turn=r.turn.turn,
            parent_turn=-1,
            expected_n_out=r.osl,
            think_s=0.0,
            reusable_tokens=reusable_tokens(r, block_tokens),
        )
        for k, r in enumerate(requests)
    ]
    async with StreamingClient(base_url, model, "completions", 1, timeout_s=timeout_s) as client:
        loop = asyncio.get_running_loop()

        async def one(request: ReplayRequest, record: RequestRow) -> None:
            await asyncio.sleep(max(0.0, start + request.offset_s - loop.time()))
            await client.send(request.prompt, record, osl=request.osl)
            progress(1)

        monitor.start()
        start = loop.time()
        t_start = time.perf_counter_ns()
        await asyncio.gather(*(one(r, rec) for r, rec in zip(requests, records, strict=True)))
        t_end = time.perf_counter_ns()
        await monitor.stop()
    return PointRun(
        list(records),
        t_start,
        t_end,
        monitor.cpu_share,
        percentile(monitor.lags_s, 99),
        max(monitor.lags_s) if monitor.lags_s else None,
    )


def run_trace_point(
    base_url: str,
    model: str,
    point: BenchPoint,
    requests: Sequence[ReplayRequest],
    progress: Progress = lambda _: None,
    timeout_s: float = 3600.0,
) -> PointRun:
    """Send every request at its (sped-up) trace time, whatever the server's state: an open loop."""
    assert isinstance(point.source, TraceSource)
    coro = _replay(base_url, model, point.source.block_tokens, requests, progress, timeout_s)
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)
