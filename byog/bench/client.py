"""The streaming load generator's client: one request -> one ``RequestRecord`` with exact token accounting.

Why aiohttp: it is what vLLM's own bench client uses and, measured with ``bench/client_ceiling.py``,
the faster of aiohttp/httpx for many concurrent SSE streams. The timestamp is taken once per
network read (``perf_counter_ns`` right after the read returns): every event in that read
arrived then. Token counts come from the server's cumulative ``usage.completion_tokens`` on each
chunk (``stream_options.continuous_usage_stats``), so a chunk carrying k tokens counts k.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from byog.bench.metrics import RequestTrace

try:  # msgspec ships with vLLM and decodes ~2x faster than json; json is the fallback.
    from msgspec.json import decode as _json_decode
except ImportError:  # pragma: no cover
    from json import loads as _json_decode  # type: ignore[assignment]

API_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


@dataclass
class RequestRecord:
    """The raw row of one request (one parquet row). Timestamps are ``perf_counter_ns``."""

    request_index: int
    wave: int  # batch workload: wave number (warm-up waves first); other workloads: -1
    warmup: bool
    expected_n_in: int  # what the prompt should cost the server, in tokens
    t_send_ns: int = 0
    chunk_t_ns: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    n_in: int | None = None
    n_out: int = 0
    error: str | None = None
    usage_per_chunk: bool = True  # False: the server sent chunks without usage (counts guessed as 1)

    def trace(self) -> RequestTrace:
        return RequestTrace(self.t_send_ns, self.chunk_t_ns, self.chunk_tokens, self.n_in, self.n_out, self.error)


def request_body(api: str, model: str, prompt: Any, osl: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON body: exactly OSL output tokens (max = min, EOS ignored), greedy, usage on every chunk."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": osl,
        "min_tokens": osl,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    if api == "chat":
        body["messages"] = prompt
    else:
        body["prompt"] = prompt
    body.update(extra or {})
    return body


class StreamingClient:
    """One aiohttp session for a whole point; ``send`` streams one request and records it."""

    def __init__(self, base_url: str, model: str, api: str, osl: int, *, timeout_s: float = 3600.0,
                 extra_body: dict[str, Any] | None = None) -> None:
        self.url = base_url.rstrip("/") + API_PATHS[api]
        self.model, self.api, self.osl = model, api, osl
        self.timeout_s = timeout_s
        self.extra_body = extra_body or {}
        self._session: Any = None

    async def __aenter__(self) -> "StreamingClient":
        import aiohttp

        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=False),
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            read_bufsize=1 << 18,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._session.close()

    async def send(self, prompt: Any, record: RequestRecord) -> RequestRecord:
        """Send one request; fill ``record`` in place (and return it). Never raises for server errors."""
        body = request_body(self.api, self.model, prompt, self.osl, self.extra_body)
        perf_ns = time.perf_counter_ns
        record.t_send_ns = perf_ns()
        try:
            async with self._session.post(self.url, json=body) as response:
                if response.status != 200:
                    text = (await response.text())[:500]
                    record.error = f"HTTP {response.status}: {text}"
                    return record
                await _consume_stream(response.content, record, perf_ns)
        except Exception as err:  # network errors, server death: recorded, never raised
            record.error = f"{type(err).__name__}: {err}"[:500] or type(err).__name__
        if record.error is None and not record.chunk_t_ns:
            record.error = "stream ended without a token"
        if record.error is None and sum(record.chunk_tokens) != record.n_out and record.usage_per_chunk:
            record.error = f"chunk tokens sum to {sum(record.chunk_tokens)} but usage says {record.n_out}"
        return record


async def _consume_stream(content: Any, record: RequestRecord, perf_ns: Any) -> None:
    buffer = b""
    seen_tokens = 0
    done = False
    async for data in content.iter_any():
        t = perf_ns()
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if not line.startswith(b"data:"):
                continue  # blank separators, SSE comments (": ping")
            payload = line[5:].strip()
            if payload == b"[DONE]":
                done = True
                continue
            event = _json_decode(payload)
            if "error" in event and not event.get("choices"):
                err = event["error"]
                record.error = str(err.get("message", err) if isinstance(err, dict) else err)[:500]
                continue
            usage = event.get("usage")
            if event.get("choices"):
                if usage is not None:
                    k = usage["completion_tokens"] - seen_tokens
                    seen_tokens = usage["completion_tokens"]
                else:
                    record.usage_per_chunk = False
                    k = 1
                    seen_tokens += 1
                if k > 0:
                    record.chunk_t_ns.append(t)
                    record.chunk_tokens.append(k)
            elif usage is not None:  # the final usage chunk (choices = [])
                record.n_in = usage.get("prompt_tokens")
                record.n_out = usage.get("completion_tokens") or 0
    if not done and record.error is None:
        record.error = "stream closed before [DONE]"
    if record.n_out == 0 and not record.usage_per_chunk:
        record.n_out = seen_tokens
