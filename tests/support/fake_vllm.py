"""A tiny stand-in for vLLM's completions API with logprobs, for the numerics runner's unit tests.

Next-token logits are a seeded function of (last token, position) plus the server's own noise,
so a greedy generation is deterministic, teacher-forcing it gives the same numbers as decoding
it, and a "candidate" with more noise is a numerical change. Only what the numerics runner
sends is implemented: /tokenize, /detokenize, /v1/models and /v1/completions with ``logprobs``,
``prompt_logprobs`` and the ``token_id:N`` keys; /v1/chat/completions answers as the completion of
the messages' text (what lm-eval's chat model reads: the message's content).

With ``sleep_mode`` (vLLM's ``--enable-sleep-mode`` under ``VLLM_SERVER_DEV_MODE=1``) it serves the
dev endpoints as vLLM 0.32's ``entrypoints/serve/dev/sleep/api_router.py`` does: ``POST /sleep?level=N``
answers ``{"status": "sleeping", "level": N}``, ``POST /wake_up`` ``{"status": "awake", "tags": null}``,
``GET /is_sleeping`` ``{"is_sleeping": bool}``; completions are refused with 503 while asleep. With
``swap_bodies=False`` the two POSTs answer an empty 200 instead, as vLLM 0.24 does (seen on the H200).
Without ``sleep_mode`` those paths are 404, as FastAPI answers a route that is not attached.

Wake integrity (CPU vLLM has no sleep mode, so this double is the only way to see a wake go wrong):
``changes_after_wake=k`` makes every wake from the k-th on serve other greedy tokens (another model),
and ``acceptance=(before, after, k)`` serves vLLM's spec-decode counters on ``/metrics`` with that mean
acceptance length, dropping to ``after`` from the k-th wake on (a drafter not restored); a text prompt
is tokenized as ``/tokenize`` does; ``POST /reset_prefix_cache`` answers 200 under sleep (dev) mode.
A level-2 sleep discards the weights: until ``POST /collective_rpc {"method": "reload_weights"}`` the
server generates token id 0 over and over with HTTP 200, as vLLM did on the H200; ``/wake_up?tags=weights``
leaves it asleep until ``tags=kv_cache`` (vLLM's documented level-2 route).

``logit_scale`` multiplies the seeded logits (the "model"; the noise is added after): 1.0, the default,
gives peaked next-token distributions; ``FLAT`` (0.01) makes every one near uniform, p(top-1)/p(top-5)
about 1.01, under a plan's ``flat_head_ratio`` (1.05): a model with random weights, as vLLM's
``--load-format dummy`` serves. Greedy decoding stays deterministic (the argmax of the same logits).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

VOCAB = 300
FLAT = 0.01  # a logit_scale whose next-token distributions are flat (a random-weights model)


class FakeVllm:
    def __init__(
        self,
        noise: float = 0.0,
        max_model_len: int | None = 4096,  # None: its /v1/models card states none (not vLLM)
        sleep_mode: bool = False,
        swap_bodies: bool = True,
        changes_after_wake: int | None = None,
        acceptance: tuple[float, float, int] | None = None,
        delay_s: float = 0.0,
        logit_scale: float = 1.0,
    ) -> None:
        self.logit_scale = logit_scale
        self.delay_s = delay_s  # each completion's time at the server (a request in flight, for benchmarks)
        self.noise, self.max_model_len, self.sleep_mode = noise, max_model_len, sleep_mode
        self.swap_bodies = swap_bodies
        self.changes_after_wake, self.acceptance = changes_after_wake, acceptance
        self.wakes = 0
        self.weights_lost = False
        self.drafts = self.accepted = 0.0
        self.requests: list[dict[str, Any]] = []
        self.sleeping = False
        self.calls: list[str] = []  # the sleep-mode calls, in order: "sleep?level=1", "wake_up", "is_sleeping"
        self.httpd = _FakeHTTPServer(self)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()

    def logprobs(self, last: int, position: int) -> np.ndarray:
        changed = self.changes_after_wake is not None and self.wakes >= self.changes_after_wake
        logits = np.random.default_rng([last, position, 7] if changed else [last, position]).normal(0.0, 2.0, VOCAB)
        logits = self.logit_scale * logits
        if self.noise:
            logits = logits + self.noise * np.random.default_rng().normal(0.0, 1.0, VOCAB)
        return logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())

    @staticmethod
    def _top(lp: np.ndarray, k: int) -> list[int]:
        return [int(i) for i in np.argsort(-lp, kind="stable")[:k]]

    def metrics(self) -> str:
        return (
            f'vllm:spec_decode_num_drafts_total{{engine="0"}} {self.drafts}\n'
            f'vllm:spec_decode_num_accepted_tokens_total{{engine="0"}} {self.accepted}\n'
        )

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.delay_s:
            time.sleep(self.delay_s)
        prompt = body["prompt"]
        ids = list(prompt) if isinstance(prompt, list) else tokenize(str(prompt))
        if self.acceptance is not None:
            before, after, from_wake = self.acceptance
            self.drafts += 10
            self.accepted += 10 * ((after if self.wakes >= from_wake else before) - 1)
        k = body.get("logprobs")
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
        if body.get("prompt_logprobs"):
            pk = int(body["prompt_logprobs"])
            entries: list[Any] = [None]
            for i in range(1, len(ids)):
                lp = self.logprobs(ids[i - 1], i)
                entry = {str(t): {"logprob": float(lp[t]), "rank": r + 1} for r, t in enumerate(self._top(lp, pk))}
                entry[str(ids[i])] = {"logprob": float(lp[ids[i]]), "rank": int((lp > lp[ids[i]]).sum()) + 1}
                entries.append(entry)
            choice["prompt_logprobs"] = entries
        out, lps, tops = [], [], []
        for _ in range(int(body.get("max_tokens", 16))):
            lp = self.logprobs(ids[-1], len(ids))
            token = 0 if self.weights_lost else int(np.argmax(lp))
            out.append(token)
            lps.append(float(lp[token]))
            tops.append({f"token_id:{t}": float(lp[t]) for t in self._top(lp, int(k or 1))})
            ids.append(token)
        choice["text"] = "x" * len(out)
        choice["token_ids"] = out
        if k:
            choice["logprobs"] = {"tokens": [f"token_id:{t}" for t in out], "token_logprobs": lps, "top_logprobs": tops}
        return {"choices": [choice], "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(out)}}

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """A chat completion: the messages' text as one prompt, the answer as the message's content."""
        done = self.complete({**body, "prompt": _chat_prompt(body["messages"]), "logprobs": None})
        choice = done["choices"][0]
        message = {"role": "assistant", "content": choice["text"]}
        return {**done, "choices": [{"index": 0, "message": message, "finish_reason": choice["finish_reason"]}]}


def _chat_prompt(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


def tokenize(text: str) -> list[int]:
    return [256 + (ord(c) % 40) for c in text]


class _FakeHTTPServer(ThreadingHTTPServer):
    def __init__(self, fake: FakeVllm) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    server: _FakeHTTPServer

    @property
    def fake(self) -> FakeVllm:
        return self.server.fake

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, body: Any, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/is_sleeping":
            if not self.fake.sleep_mode:
                return self._send({"detail": "Not Found"}, 404)
            self.fake.calls.append("is_sleeping")
            return self._send({"is_sleeping": self.fake.sleeping})
        if self.path == "/metrics":
            data = self.fake.metrics().encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        context = {} if self.fake.max_model_len is None else {"max_model_len": self.fake.max_model_len}
        self._send({"data": [{"id": "fake", **context}]})

    def do_POST(self) -> None:
        path, _, query = self.path.partition("?")
        if path in ("/sleep", "/wake_up"):
            return self._sleep_call(path, query)
        if path == "/reset_prefix_cache":
            return self._send({}, 200 if self.fake.sleep_mode else 404)
        if path == "/collective_rpc":
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.fake.calls.append(f"collective_rpc {body.get('method')}")
            self.fake.weights_lost = self.fake.weights_lost and body.get("method") != "reload_weights"
            return self._send({"results": [None]})
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.fake.requests.append(body)
        if self.fake.sleeping and path.startswith("/v1/"):
            self._send({"error": {"message": "The model is sleeping", "code": 503}}, 503)
        elif self.path == "/tokenize":
            self._send({"tokens": tokenize(body["prompt"])})
        elif self.path == "/detokenize":
            self._send({"prompt": "".join("x" for t in body["tokens"] if t < VOCAB)})
        elif path == "/v1/chat/completions":
            self._send(self.fake.chat(body))
        else:
            self._send(self.fake.complete(body))

    def _sleep_call(self, path: str, query: str) -> None:
        if not self.fake.sleep_mode:
            return self._send({"detail": "Not Found"}, 404)
        if path == "/sleep":
            level = int(dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("level", 1))
            self.fake.calls.append(f"sleep?level={level}")
            self.fake.sleeping = True
            self.fake.weights_lost = self.fake.weights_lost or level == 2
            return self._swapped({"status": "sleeping", "level": level})
        self.fake.calls.append(f"wake_up?{query}" if query else "wake_up")
        if query != "tags=weights":
            self.fake.sleeping = False
            self.fake.wakes += 1
        self._swapped({"status": "awake", "tags": None})

    def _swapped(self, body: dict[str, Any]) -> None:
        if self.fake.swap_bodies:
            return self._send(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
