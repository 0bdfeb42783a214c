"""The client ceiling: how many streamed tokens/s byog's load generator sustains on this host.

``byog client-ceiling`` serves a tiny OpenAI-compatible SSE server on loopback that streams canned
chunks as fast as it can (it does no model work, so the client is the bottleneck) and runs byog's
own closed-loop client against it. A sweep whose server approaches this rate measures the
client, not the server. ``benchmarks/client_ceiling.py`` compares it with other clients; unit
tests run whole sweeps against the same server without vLLM. Raw asyncio with hand-written HTTP/1.1 chunked
responses: an HTTP framework would be the bottleneck instead of the client under test.

It mimics vLLM 0.32's stream: one chunk per engine step carrying ``tokens_per_chunk`` tokens,
cumulative ``usage`` on every chunk (``continuous_usage_stats``), a final usage chunk with
``choices: []``, then ``data: [DONE]``. ``/metrics`` exports the counters byog reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import httpx

from byog.bench.prompts import Prompt
from byog.bench.workloads import run_point
from byog.core.errors import EnvironmentProblem
from byog.schemas.bench import BenchPoint
from byog.schemas.plan import RandomPrompts

VOCAB_SIZE = 1000


class Ceiling(TypedDict):
    """What byog's client sustained against the loopback server, and what it cost the client."""

    tok_s: float
    chunks: int
    tokens: int
    wall_s: float
    errors: int
    cpu_us_per_chunk: float  # NaN when no chunk arrived
    cpu_share: float  # of one core


@dataclass
class FakeConfig:
    tokens_per_chunk: int = 1  # > 1 mimics speculative decoding (k tokens per step)
    step_s: float = 0.0  # sleep between chunks; 0 = as fast as the loop can write
    vocab_size: int = VOCAB_SIZE
    dev_mode: bool = True  # serves POST /reset_prefix_cache, as vLLM does under VLLM_SERVER_DEV_MODE=1


class FakeOpenAIServer:
    def __init__(self, config: FakeConfig | None = None) -> None:
        self.config = config or FakeConfig()
        self.generation_tokens = 0
        self.prompt_tokens = 0
        self.steps = 0
        self.requests = 0
        self.cache_resets = 0
        self._cache: dict[tuple[bool, int, int, int, bool], bytes] = {}

    # --- HTTP ------------------------------------------------------------------------------
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, path, _ = request_line.split(" ", 2)
                length = 0
                for line in header_lines:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                body = json.loads(await reader.readexactly(length)) if length else {}
                path = path.split("?", 1)[0]
                if path in ("/v1/completions", "/v1/chat/completions") and method == "POST":
                    await self._stream(writer, body, chat=path.endswith("chat/completions"))
                else:
                    status, payload = self._simple(method, path, body)
                    data = payload.encode()
                    ctype = "text/plain" if path == "/metrics" else "application/json"
                    writer.write(
                        f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n\r\n".encode()
                        + data
                    )
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client closed the connection, or the server is shutting down
        finally:
            writer.close()

    def _simple(self, method: str, path: str, body: dict[str, Any]) -> tuple[str, str]:
        if path == "/health":
            return "200 OK", ""
        if path == "/v1/models":
            return "200 OK", json.dumps(
                {"object": "list", "data": [{"id": "fake", "object": "model", "max_model_len": 4096}]}
            )
        if path == "/version":
            return "200 OK", json.dumps({"version": "fake"})
        if path == "/metrics":
            lines = [
                f'vllm:generation_tokens_total{{engine="0"}} {float(self.generation_tokens)}',
                f'vllm:prompt_tokens_total{{engine="0"}} {float(self.prompt_tokens)}',
                f'vllm:iteration_tokens_total_count{{engine="0"}} {float(self.steps)}',
                'vllm:prefix_cache_hits_total{engine="0"} 0.0',
                'vllm:num_preemptions_total{engine="0"} 0.0',
            ]
            return "200 OK", "\n".join(lines) + "\n"
        if path == "/tokenize" and method == "POST":
            if "messages" in body:
                count = sum(len(str(m.get("content", "")).split()) for m in body["messages"]) + 10
                return "200 OK", json.dumps({"count": count, "tokens": list(range(count))})
            ids = [hash(w) % self.config.vocab_size for w in str(body.get("prompt", "")).split()]
            return "200 OK", json.dumps({"count": len(ids), "tokens": ids})
        if path == "/reset_prefix_cache" and method == "POST" and self.config.dev_mode:
            self.cache_resets += 1  # it caches nothing: the count is what a test reads
            return "200 OK", ""
        if path == "/detokenize" and method == "POST":
            text = " ".join(f"w{i}" for i in body.get("tokens", []) if 0 <= i < self.config.vocab_size)
            return "200 OK", json.dumps({"prompt": text})
        return "404 Not Found", json.dumps({"detail": "Not Found"})

    async def _stream(self, writer: asyncio.StreamWriter, body: dict[str, Any], chat: bool) -> None:
        self.requests += 1
        prompt = body.get("messages") if chat else body.get("prompt")
        n_in = len(prompt) if isinstance(prompt, list) and not chat else len(str(prompt).split()) + 10
        osl = int(body.get("max_tokens") or 16)
        k = self.config.tokens_per_chunk
        self.prompt_tokens += n_in
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        ids = bool(body.get("return_token_ids")) and not chat
        frames = self._frames(chat, n_in, osl, k, ids)
        self.generation_tokens += osl
        self.steps += len(frames) - 1
        if not self.config.step_s:
            writer.write(
                self._joined(chat, n_in, osl, k, ids)
            )  # the whole stream at once: the client is the bottleneck
            await writer.drain()
            return
        for i, frame in enumerate(frames):
            writer.write(frame)
            await writer.drain()
            if i < len(frames) - 2:  # vLLM sends the usage chunk right after the last token
                await asyncio.sleep(self.config.step_s)

    def _frames(self, chat: bool, n_in: int, osl: int, k: int, ids: bool = False) -> list[bytes]:
        """HTTP chunked frames: one per engine step (k tokens each), then the usage chunk + [DONE] + end.

        ``ids``: each completions chunk lists its tokens' ids (vLLM's ``return_token_ids``; the fake's
        ids are all 300), so a multi-turn session can append the answer to its context.
        """
        obj = b"chat.completion.chunk" if chat else b"text_completion"
        choice = (
            b'{"index":0,"delta":{"content":"x"},"finish_reason":null}'
            if chat
            else b'{"index":0,"text":"x","finish_reason":null}'
        )
        frames = []
        done = 0
        while done < osl:
            step = min(k, osl - done)
            done += step
            if ids:
                choice = (
                    b'{"index":0,"text":"x","token_ids":[' + b",".join([b"300"] * step) + b'],"finish_reason":null}'
                )
            event = (
                b'data: {"id":"cmpl-1","object":"'
                + obj
                + b'","model":"fake","choices":['
                + choice
                + b'],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}\n\n'
                % (n_in, n_in + done, done)
            )
            frames.append(b"%x\r\n%s\r\n" % (len(event), event))
        final = (
            b'data: {"id":"cmpl-1","object":"' + obj + b'","model":"fake","choices":[],'
            b'"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}\n\ndata: [DONE]\n\n'
            % (n_in, n_in + done, done)
        )
        frames.append(b"%x\r\n%s\r\n0\r\n\r\n" % (len(final), final))
        return frames

    def _joined(self, chat: bool, n_in: int, osl: int, k: int, ids: bool = False) -> bytes:
        key = (chat, n_in, osl, k, ids)
        if key not in self._cache:
            self._cache[key] = b"".join(self._frames(chat, n_in, osl, k, ids))
        return self._cache[key]


async def serve(host: str, port: int, config: FakeConfig | None = None) -> tuple[asyncio.Server, FakeOpenAIServer]:
    app = FakeOpenAIServer(config)
    server = await asyncio.start_server(app.handle, host, port, backlog=4096)
    return server, app


class FakeServerThread:
    """The fake server on a background thread (for tests): ``with FakeServerThread() as s: s.base_url``."""

    def __init__(self, config: FakeConfig | None = None) -> None:
        self.config = config
        self.loop = asyncio.new_event_loop()
        self.app: FakeOpenAIServer | None = None
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.base_url = ""

    def __enter__(self) -> FakeServerThread:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(serve("127.0.0.1", 0, self.config), self.loop)
        self._server, self.app = future.result(10)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


@contextlib.contextmanager
def server_process(tokens_per_chunk: int = 1, step_s: float = 0.0) -> Iterator[str]:
    """The loopback server in a process of its own (it must not share the client's GIL); yields its URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "byog.bench.ceiling", str(port), str(tokens_per_chunk), str(step_s)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            raise EnvironmentProblem("the loopback server for the client ceiling did not start")
        yield base_url
    finally:
        proc.kill()
        proc.wait()


def measure_client_ceiling(concurrency: int, num_prompts: int, osl: int, base_url: str) -> Ceiling:
    """byog's closed loop against a loopback server: tokens/s, client CPU per chunk, errors."""
    point = BenchPoint(
        point_id="ceiling",
        workload="ceiling",
        kind="concurrency",
        concurrency=concurrency,
        isl=32,
        osl=osl,
        prompts=RandomPrompts(),
        num_prompts=num_prompts,
    )
    prompts = [Prompt(list(range(300, 332)), 32)] * num_prompts
    run = run_point(base_url, "fake", point, prompts)
    wall = (run.t_end_ns - run.t_start_ns) / 1e9
    tokens = sum(r.n_out for r in run.records)
    chunks = sum(len(r.chunk_t_ns) for r in run.records)
    cpu_s = (run.cpu_share or 0.0) * wall
    return {
        "tok_s": tokens / wall,
        "chunks": chunks,
        "tokens": tokens,
        "wall_s": wall,
        "errors": sum(r.error is not None for r in run.records),
        "cpu_us_per_chunk": cpu_s / chunks * 1e6 if chunks else float("nan"),
        "cpu_share": run.cpu_share or 0.0,
    }


def main() -> (
    None
):  # python -m byog.bench.ceiling PORT [TOKENS_PER_CHUNK [STEP_S]]: the server alone, for other clients

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    step_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0

    async def run() -> None:
        server, _ = await serve("127.0.0.1", port, FakeConfig(tokens_per_chunk=k, step_s=step_s))
        async with server:
            await server.serve_forever()

    try:
        import uvloop

        uvloop.run(run())
    except ImportError:
        asyncio.run(run())


if __name__ == "__main__":
    main()
