"""The streaming load generator's client: one request -> one ``RequestRow`` with exact token accounting.

Why aiohttp: it is what vLLM's own bench client uses and, measured with ``bench/client_ceiling.py``,
the faster of aiohttp/httpx for many concurrent SSE streams. The timestamp is taken once per
network read (``perf_counter_ns`` right after the read returns): every event in that read
arrived then. Token counts come from the server's cumulative ``usage.completion_tokens`` on each
chunk (``stream_options.continuous_usage_stats``), so a chunk carrying k tokens counts k.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from byog.schemas.bench import RequestRow
from byog.schemas.plan import RequestBodyStyle

_json_decode: Callable[[bytes], Any]
try:  # msgspec ships with vLLM and decodes ~2x faster than json; json is the fallback.
    from msgspec.json import decode as _json_decode
except ImportError:  # pragma: no cover
    from json import loads as _json_decode

API_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def request_body(
    api: str, model: str, prompt: Any, osl: int, extra: dict[str, Any] | None = None, style: RequestBodyStyle = "byog"
) -> dict[str, Any]:
    """The JSON body: OSL output tokens (EOS ignored), greedy, streamed.

    ``byog``: also ``min_tokens = OSL`` and usage on every chunk (``continuous_usage_stats``), so
    each chunk's token count is the server's own (a speculative chunk of k tokens counts k).
    ``vllm``: exactly what ``vllm bench serve`` (openai backend, ``--temperature 0``) sends: usage
    only at the end, so each chunk counts as one token (docs/metrics.md says when that is wrong).
    A key of ``extra`` set to None removes that key (experiments that drop one field).
    """
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": osl,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if style == "byog":
        body["min_tokens"] = osl
        body["stream_options"]["continuous_usage_stats"] = True
    if api == "chat":
        body["messages"] = prompt
    else:
        body["prompt"] = prompt
    body.update(extra or {})
    return {key: value for key, value in body.items() if value is not None}


class StreamingClient:
    """One aiohttp session for a whole point; ``send`` streams one request and records it."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api: str,
        osl: int,
        *,
        timeout_s: float = 3600.0,
        extra_body: dict[str, Any] | None = None,
        body_style: RequestBodyStyle = "byog",
    ) -> None:
        self.url = base_url.rstrip("/") + API_PATHS[api]
        self.model, self.api, self.osl = model, api, osl
        self.timeout_s = timeout_s
        self.extra_body = extra_body or {}
        self.body_style = body_style
        self._session: Any = None

    async def __aenter__(self) -> StreamingClient:
        import aiohttp

        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=False),
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            read_bufsize=1 << 18,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._session.close()

    async def send(
        self, prompt: Any, record: RequestRow, osl: int | None = None, output_ids: list[int] | None = None
    ) -> RequestRow:
        """Send one request; fill ``record`` in place (and return it). Never raises for server errors.

        ``osl`` overrides the client's OSL for this request. ``output_ids``: a list the streamed
        answer's token ids are appended to (the request asks for ``return_token_ids``), so a
        multi-turn session can put the exact answer into its next prompt.
        """
        extra = self.extra_body if output_ids is None else {**self.extra_body, "return_token_ids": True}
        body = request_body(self.api, self.model, prompt, osl or self.osl, extra, self.body_style)
        perf_ns = time.perf_counter_ns
        record.t_send_ns = perf_ns()
        try:
            async with self._session.post(self.url, json=body) as response:
                if response.status != 200:
                    text = (await response.text())[:500]
                    record.error = f"HTTP {response.status}: {text}"
                    return record
                await _consume_stream(response.content, record, perf_ns, output_ids)
        except Exception as err:  # network errors, server death: recorded, never raised
            record.error = f"{type(err).__name__}: {err}"[:500] or type(err).__name__
        if record.error is None and not record.chunk_t_ns:
            record.error = "stream ended without a token"
        if record.error is None and sum(record.chunk_tokens) != record.n_out and record.usage_per_chunk:
            record.error = f"chunk tokens sum to {sum(record.chunk_tokens)} but usage says {record.n_out}"
        return record


def _read_event(event: Any, record: RequestRow, t: int, seen_tokens: int, output_ids: list[int] | None) -> int:
    """One SSE event (received at ``t``) into ``record``; returns the completion tokens seen so far."""
    if "error" in event and not event.get("choices"):
        err = event["error"]
        record.error = str(err.get("message", err) if isinstance(err, dict) else err)[:500]
        return seen_tokens
    usage = event.get("usage")
    choices = event.get("choices")
    if choices:
        if output_ids is not None:
            output_ids.extend(choices[0].get("token_ids") or ())
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
        # vLLM reports it only when started with --enable-prompt-tokens-details
        record.cached_tokens = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return seen_tokens


async def _consume_stream(content: Any, record: RequestRow, perf_ns: Any, output_ids: list[int] | None = None) -> None:
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
            seen_tokens = _read_event(_json_decode(payload), record, t, seen_tokens, output_ids)
    if not done and record.error is None:
        record.error = "stream closed before [DONE]"
    if record.n_out == 0 and not record.usage_per_chunk:
        record.n_out = seen_tokens
