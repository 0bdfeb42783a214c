"""Conformance: the features a production server must keep, each checked pass/fail on one server.

Every check sends a few small requests and returns one record: ``check``, ``passed``, a
one-line ``reason`` a reader can act on, and ``detail`` (what was sent and seen). Prompts are
token ids built from fixed English text through the server's own /tokenize, so two servers of
a plan get the same requests. A check never raises on a server's misbehaviour: an HTTP error or
an odd answer is that check failing, with the status and message in the reason.

The candidate is held to what its baseline passes (``byog.analysis.conformance_stats``); the one
check that needs the baseline's answer is the longest accepted prompt: the candidate must accept
a prompt as long as the baseline's longest (``longest_prompt``), not merely its own.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from byog.analysis.conformance_stats import chi_square
from byog.analysis.counters import PREFIX_CACHE_HITS, counter_totals

TEXT = (
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
    "combined a screw press with movable metal type. Within fifty years, presses had spread to "
    "more than two hundred cities across Europe, and the price of books fell sharply. "
)
# Openings whose next token is uncertain: the chi-square check picks the first that spreads its mass.
OPEN_PROMPTS = (
    "My favourite colour is",
    "Once upon a time, there was a",
    "The best thing about weekends is",
    "I think that",
)
JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
CHI_SQUARE_SAMPLES = 400
CHI_SQUARE_TOP_K = 20
MAX_TOKENS = 32
CHECKS = (
    "stop_string",
    "max_tokens_exact",
    "n_choices",
    "seed_reproducible",
    "sampling_chi_square",
    "structured_output",
    "stream_matches_non_stream",
    "prefix_cache_same_text",
    "longest_prompt_accepted",
    "too_long_prompt_400",
)


@dataclass
class Check:
    check: str
    passed: bool
    reason: str
    detail: dict[str, Any]

    def record(self) -> dict[str, Any]:
        return {"check": self.check, "passed": self.passed, "reason": self.reason, "detail": self.detail}


class ServerError(Exception):
    """An HTTP answer other than 200, kept as a one-line message."""


def _one_line(text: str, limit: int = 200) -> str:
    return " ".join(text.split())[:limit]


class Conformance:
    """One server's conformance checks; ``run`` returns their records in ``CHECKS`` order."""

    def __init__(self, base_url: str, model: str, *, timeout_s: float = 600.0, seed: int = 0) -> None:
        self.base_url, self.model, self.seed = base_url.rstrip("/"), model, seed
        self.http = httpx.Client(timeout=timeout_s)
        self._text_ids: list[int] | None = None

    def close(self) -> None:
        self.http.close()

    # --- plumbing ------------------------------------------------------------------------
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(self.base_url + "/v1/completions", json={"model": self.model, **body})
        if response.status_code != 200:
            raise ServerError(f"HTTP {response.status_code}: {_one_line(_error_message(response))}")
        return dict(response.json())

    def tokens(self, text: str) -> list[int]:
        response = self.http.post(
            self.base_url + "/tokenize", json={"model": self.model, "prompt": text, "add_special_tokens": False}
        )
        response.raise_for_status()
        return [int(t) for t in response.json()["tokens"]]

    @property
    def text_ids(self) -> list[int]:
        if self._text_ids is None:
            self._text_ids = self.tokens(TEXT)
        return self._text_ids

    def ids_of_length(self, n: int, offset: int = 0) -> list[int]:
        """``n`` ids of real text (TEXT repeated), starting ``offset`` ids in: distinct offsets, distinct prompts."""
        base = self.text_ids
        return [base[(offset + i) % len(base)] for i in range(n)]

    def max_model_len(self) -> int | None:
        response = self.http.get(self.base_url + "/v1/models")
        response.raise_for_status()
        data = response.json().get("data") or [{}]
        value = data[0].get("max_model_len")
        return int(value) if value else None

    def greedy(self, ids: list[int], max_tokens: int = MAX_TOKENS, **extra: Any) -> dict[str, Any]:
        answer = self.post({"prompt": ids, "max_tokens": max_tokens, "temperature": 0.0, **extra})
        return dict(answer["choices"][0])

    # --- the checks ----------------------------------------------------------------------
    def stop_string(self) -> Check:
        ids = self.text_ids[:24]
        free = self.greedy(ids, ignore_eos=True)["text"]
        stop = stop_candidate(free)
        if stop is None:
            return Check(
                "stop_string", False, f"the greedy output {free[:60]!r} has no word to stop on", {"text": free}
            )
        cut = self.greedy(ids, stop=[stop], ignore_eos=True)
        expected = free[: free.index(stop)]
        detail = {"stop": stop, "expected": expected, "got": cut["text"], "finish_reason": cut.get("finish_reason")}
        if cut["text"] != expected:
            return Check(
                "stop_string", False, f"stop={stop!r}: got {cut['text'][:60]!r}, expected {expected[:60]!r}", detail
            )
        if cut.get("finish_reason") != "stop":
            return Check(
                "stop_string", False, f"stop={stop!r}: finish_reason {cut.get('finish_reason')!r}, not 'stop'", detail
            )
        return Check("stop_string", True, f"output ends before {stop!r} with finish_reason 'stop'", detail)

    def max_tokens_exact(self) -> Check:
        n = 17
        answer = self.post(
            {
                "prompt": self.text_ids[:16],
                "max_tokens": n,
                "temperature": 0.0,
                "ignore_eos": True,
                "return_token_ids": True,
            }
        )
        choice = answer["choices"][0]
        usage = int((answer.get("usage") or {}).get("completion_tokens", -1))
        got = len(choice.get("token_ids") or [])
        detail = {"max_tokens": n, "token_ids": got, "usage": usage, "finish_reason": choice.get("finish_reason")}
        if got != n or usage != n:
            return Check("max_tokens_exact", False, f"max_tokens={n} gave {got} tokens (usage says {usage})", detail)
        if choice.get("finish_reason") != "length":
            return Check(
                "max_tokens_exact", False, f"finish_reason {choice.get('finish_reason')!r}, not 'length'", detail
            )
        return Check("max_tokens_exact", True, f"exactly {n} tokens, finish_reason 'length'", detail)

    def n_choices(self) -> Check:
        n = 3
        answer = self.post(
            {
                "prompt": self.text_ids[:16],
                "max_tokens": 8,
                "temperature": 1.0,
                "n": n,
                "seed": self.seed,
                "ignore_eos": True,
                "return_token_ids": True,
            }
        )
        choices = answer.get("choices") or []
        indices = sorted(int(c.get("index", -1)) for c in choices)
        lengths = [len(c.get("token_ids") or []) for c in choices]
        detail = {"n": n, "indices": indices, "lengths": lengths, "distinct": len({c["text"] for c in choices})}
        if indices != list(range(n)) or lengths != [8] * n:
            return Check("n_choices", False, f"n={n} gave choices {indices} with {lengths} tokens", detail)
        return Check("n_choices", True, f"n={n}: {n} choices of 8 tokens ({detail['distinct']} distinct texts)", detail)

    def seed_reproducible(self) -> Check:
        body = {
            "prompt": self.text_ids[:16],
            "max_tokens": 16,
            "temperature": 1.0,
            "seed": self.seed + 1234,
            "ignore_eos": True,
        }
        first = self.post(body)["choices"][0]["text"]
        second = self.post(body)["choices"][0]["text"]
        other = self.post({**body, "seed": self.seed + 4321})["choices"][0]["text"]
        detail = {"first": first, "second": second, "other_seed": other}
        if first != second:
            return Check(
                "seed_reproducible", False, f"seed {body['seed']} twice: {first[:40]!r} vs {second[:40]!r}", detail
            )
        note = "" if other != first else " (a different seed gave the same text too)"
        return Check("seed_reproducible", True, f"the same seed gave the same sampled text{note}", detail)

    def sampling_chi_square(self) -> Check:
        ids, probs = self._spread_prompt()
        counts: dict[int, int] = {}
        per_request = 100
        for i in range(CHI_SQUARE_SAMPLES // per_request):
            # vLLM seeds the n children of a request seed, seed+1, ...: space the requests' seeds apart
            # top_p/top_k/min_p explicit: a model's generation_config may set defaults the server applies
            answer = self.post(
                {
                    "prompt": ids,
                    "max_tokens": 1,
                    "temperature": 1.0,
                    "top_p": 1.0,
                    "top_k": -1,
                    "min_p": 0.0,
                    "n": per_request,
                    "seed": self.seed + 1000 + i * per_request,
                    "return_token_ids": True,
                }
            )
            for choice in answer["choices"]:
                token = int((choice.get("token_ids") or [-1])[0])
                counts[token] = counts.get(token, 0) + 1
        result = chi_square(probs, counts)
        detail = {
            "prompt_ids": ids,
            "reported_top": {str(k): v for k, v in sorted(probs.items(), key=lambda kv: -kv[1])},
            "counts": {str(k): v for k, v in sorted(counts.items())},
            **result,
        }
        summary = (
            f"X²={result['chi2']:.1f}, dof={result['dof']}, p={result['p_value']:.3g} over {result['samples']} samples"
        )
        if not result["passed"]:
            return Check(
                "sampling_chi_square",
                False,
                f"sampled frequencies do not match the reported probabilities: {summary}",
                detail,
            )
        return Check("sampling_chi_square", True, summary, detail)

    def _spread_prompt(self) -> tuple[list[int], dict[int, float]]:
        """The first opening whose top-1 probability is below 0.6 (else the last), with its top-k probabilities."""
        chosen: tuple[list[int], dict[int, float]] | None = None
        for text in OPEN_PROMPTS:
            ids = self.tokens(text)
            choice = self.greedy(ids, max_tokens=1, logprobs=CHI_SQUARE_TOP_K, return_tokens_as_token_ids=True)
            top = (choice.get("logprobs") or {}).get("top_logprobs") or [{}]
            probs = {int(key.split(":", 1)[1]): math.exp(float(v)) for key, v in (top[0] or {}).items()}
            chosen = (ids, probs)
            if probs and max(probs.values()) < 0.6:
                break
        assert chosen is not None
        return chosen

    def structured_output(self) -> Check:
        prompt = self.tokens("Describe a person as JSON with a name and an age.\n")
        body = {
            "prompt": prompt,
            "max_tokens": 64,
            "temperature": 0.0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": JSON_SCHEMA}},
        }
        text = self.post(body)["choices"][0]["text"]
        detail = {"schema": JSON_SCHEMA, "text": text}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            return Check(
                "structured_output", False, f"not valid JSON ({err.msg} at char {err.pos}): {text[:60]!r}", detail
            )
        problem = schema_problem(value)
        if problem:
            return Check("structured_output", False, f"valid JSON but {problem}: {text[:60]!r}", detail)
        return Check("structured_output", True, f"schema-valid JSON: {text[:60]!r}", detail)

    def stream_matches_non_stream(self) -> Check:
        ids = self.ids_of_length(40, offset=3)
        plain = self.greedy(ids, ignore_eos=True)["text"]
        streamed = self._stream_text({"prompt": ids, "max_tokens": MAX_TOKENS, "temperature": 0.0, "ignore_eos": True})
        detail = {"non_stream": plain, "stream": streamed}
        if streamed != plain:
            where = next(
                (i for i, (a, b) in enumerate(zip(plain, streamed, strict=False)) if a != b),
                min(len(plain), len(streamed)),
            )
            return Check(
                "stream_matches_non_stream",
                False,
                f"greedy texts differ from character {where}: {streamed[where : where + 30]!r} vs "
                f"{plain[where : where + 30]!r}",
                detail,
            )
        return Check("stream_matches_non_stream", True, f"identical greedy text ({len(plain)} characters)", detail)

    def _stream_text(self, body: dict[str, Any]) -> str:
        parts: list[str] = []
        with self.http.stream(
            "POST", self.base_url + "/v1/completions", json={"model": self.model, "stream": True, **body}
        ) as response:
            if response.status_code != 200:
                response.read()
                raise ServerError(f"HTTP {response.status_code}: {_one_line(_error_message(response))}")
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                for choice in json.loads(data).get("choices") or []:
                    parts.append(choice.get("text") or "")
        return "".join(parts)

    def prefix_cache_same_text(self) -> Check:
        # A prompt no other check sends (offset 7), long enough to fill several KV blocks.
        ids = self.ids_of_length(300, offset=7)
        hits_before = self._prefix_hits()
        cold = self.greedy(ids, ignore_eos=True)["text"]
        warm = self.greedy(ids, ignore_eos=True)["text"]
        hits_after = self._prefix_hits()
        hits = None if hits_before is None or hits_after is None else hits_after - hits_before
        detail = {"cold": cold, "warm": warm, "prefix_cache_hit_tokens": hits}
        cache = (
            "no prefix-cache hits counted (caching off?)"
            if not hits
            else f"{hits:g} prompt tokens from the prefix cache"
        )
        if cold != warm:
            return Check(
                "prefix_cache_same_text", False, f"a repeated prompt gave different greedy text ({cache})", detail
            )
        return Check("prefix_cache_same_text", True, f"the same greedy text cold and repeated; {cache}", detail)

    def _prefix_hits(self) -> float | None:
        try:
            response = self.http.get(self.base_url + "/metrics")
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        value = counter_totals(response.text).get(PREFIX_CACHE_HITS)
        return float(value) if value is not None else None

    def longest_prompt_accepted(self, longest: int | None) -> Check:
        own = self.max_model_len()
        length = longest if longest is not None else (own - 1 if own else None)
        if length is None:
            return Check(
                "longest_prompt_accepted", False, "the server does not say its max_model_len in /v1/models", {}
            )
        answer = self.post({"prompt": self.ids_of_length(length), "max_tokens": 1, "temperature": 0.0})
        seen = int((answer.get("usage") or {}).get("prompt_tokens", -1))
        detail = {"prompt_tokens": length, "usage_prompt_tokens": seen, "max_model_len": own}
        if seen != length:
            return Check(
                "longest_prompt_accepted", False, f"a {length}-token prompt was counted as {seen} tokens", detail
            )
        return Check(
            "longest_prompt_accepted", True, f"a {length}-token prompt was accepted (max_model_len {own})", detail
        )

    def too_long_prompt_400(self) -> Check:
        own = self.max_model_len()
        if own is None:
            return Check("too_long_prompt_400", False, "the server does not say its max_model_len in /v1/models", {})
        response = self.http.post(
            self.base_url + "/v1/completions",
            json={"model": self.model, "prompt": self.ids_of_length(own + 1), "max_tokens": 1, "temperature": 0.0},
        )
        message = _one_line(_error_message(response))
        detail = {"prompt_tokens": own + 1, "status": response.status_code, "message": message}
        if response.status_code != 400:
            return Check(
                "too_long_prompt_400",
                False,
                f"a {own + 1}-token prompt got HTTP {response.status_code}, not 400",
                detail,
            )
        if str(own) not in message:
            return Check(
                "too_long_prompt_400",
                False,
                f"HTTP 400 but the message does not name the limit {own}: {message[:80]!r}",
                detail,
            )
        return Check("too_long_prompt_400", True, f"HTTP 400: {message[:100]}", detail)

    # --- all -----------------------------------------------------------------------------
    def run(self, *, longest_prompt: int | None = None) -> list[dict[str, Any]]:
        checks: dict[str, Callable[[], Check]] = {
            "stop_string": self.stop_string,
            "max_tokens_exact": self.max_tokens_exact,
            "n_choices": self.n_choices,
            "seed_reproducible": self.seed_reproducible,
            "sampling_chi_square": self.sampling_chi_square,
            "structured_output": self.structured_output,
            "stream_matches_non_stream": self.stream_matches_non_stream,
            "prefix_cache_same_text": self.prefix_cache_same_text,
            "longest_prompt_accepted": lambda: self.longest_prompt_accepted(longest_prompt),
            "too_long_prompt_400": self.too_long_prompt_400,
        }
        records = []
        for name in CHECKS:
            try:
                result = checks[name]()
            except ServerError as err:
                result = Check(name, False, str(err), {})
            except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError) as err:
                result = Check(name, False, f"{type(err).__name__}: {_one_line(str(err))}", {})
            records.append(result.record())
        return records


def run_conformance(
    base_url: str, model: str, *, longest_prompt: int | None = None, seed: int = 0
) -> list[dict[str, Any]]:
    """Every check on one server (see ``CHECKS``), one record each."""
    runner = Conformance(base_url, model, seed=seed)
    try:
        return runner.run(longest_prompt=longest_prompt)
    finally:
        runner.close()


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(body.get("message") or body.get("detail") or body) if isinstance(body, dict) else str(body)


def stop_candidate(text: str) -> str | None:
    """A word from the middle of a greedy output to stop on (its first occurrence is where output must end)."""
    words = [w for w in text.split() if len(w) >= 3 and w.isalpha()]
    for word in words[1:]:
        if text.index(word) > 0:
            return word
    return None


def schema_problem(value: Any) -> str | None:
    """What JSON_SCHEMA's object rule the value breaks, or None."""
    if not isinstance(value, dict):
        return f"a {type(value).__name__}, not an object"
    if not isinstance(value.get("name"), str):
        return "'name' is missing or not a string"
    if not isinstance(value.get("age"), int) or isinstance(value.get("age"), bool):
        return "'age' is missing or not an integer"
    return None
