"""The numerics differential's client: ask one server for token-level answers, as raw rows.

One request per prompt, on the completions API with a token-id prompt (the server sees exactly
these ids, nothing is re-tokenized): greedy (``temperature 0``), exactly ``T`` output tokens
(EOS ignored, so every server scores the same positions), ``logprobs = k`` and
``prompt_logprobs = k``, ``return_tokens_as_token_ids`` (top-k keys are ``token_id:N``, so two
ids that decode to the same text never collide). One answer gives both families:

- the **prompt** positions, teacher-forced: entry i of ``prompt_logprobs`` is the server's
  answer for prompt token i given the tokens before it (the prefill path, over the whole
  context). Every server scores the same prompt, so these are always on the same token path.
- the **output** positions, free-running: the greedy token at output index t and its top-k
  (the decode path). Two servers are on the same path until their greedy outputs first differ.

A separate teacher-forced pass over prompt + the baseline's output would prefill everything
again (on the CPU build prefill with prompt logprobs is most of the cost) to add T prefill
positions per prompt that the prompt positions already cover; the decode path cannot be
teacher-forced through the API at all. vLLM never reads the prefix cache for a
``prompt_logprobs`` request, so every pass prefills its prompts afresh in its own batch
composition: ``alone`` (one request in flight at a time) or ``together`` (every request at
once). The reference runs alone, the A/A and candidate runs together.

A row is what the server said, nothing derived: (prompt, position, output, token, logprob,
top_ids, top_logprobs), position = the number of tokens before the predicted one, the top-k
sorted by logprob descending, ties by lower id. Formulas live in ``byog.analysis.numerics``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from byog.analysis.numerics import sort_top
from byog.core.errors import ByogError

Composition = Literal["alone", "together"]
REQUEST_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class TokenPath:
    """A prompt: its name in the prompt set and its token ids."""

    prompt_id: str
    ids: list[int]


def _token_id(key: str) -> int:
    """``token_id:123`` -> 123 (what ``return_tokens_as_token_ids`` puts in logprob keys)."""
    if not key.startswith("token_id:"):
        raise ByogError(
            f"the server answered a logprob key {key!r}, not token_id:N (return_tokens_as_token_ids ignored?)"
        )
    return int(key.split(":", 1)[1])


def request_body(model: str, ids: list[int], max_tokens: int, k: int) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": ids,
        "max_tokens": max_tokens,
        "min_tokens": max_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "logprobs": k,
        "prompt_logprobs": k,
        "return_tokens_as_token_ids": True,
        "return_token_ids": True,
    }


def prompt_rows(prompt_id: str, ids: list[int], choice: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """The teacher-forced prompt positions: entry i of prompt_logprobs is the answer for ids[i] (entry 0 is null)."""
    entries = choice.get("prompt_logprobs")
    if entries is None:
        raise ByogError(f"prompt {prompt_id}: the server returned no prompt_logprobs (does it support them?)")
    if len(entries) != len(ids):
        raise ByogError(f"prompt {prompt_id}: {len(entries)} prompt_logprobs for a prompt of {len(ids)} tokens")
    rows = []
    for position in range(1, len(ids)):
        entry = entries[position] or {}
        answers = {int(key): float(v["logprob"]) for key, v in entry.items()}
        token = int(ids[position])
        if token not in answers:
            raise ByogError(f"prompt {prompt_id}: position {position} has no logprob for its own token {token}")
        top_ids, top_lps = sort_top(answers, k)
        rows.append(
            {
                "prompt": prompt_id,
                "position": position,
                "output": False,
                "token": token,
                "logprob": answers[token],
                "top_ids": top_ids,
                "top_logprobs": top_lps,
            }
        )
    return rows


def output_rows(prompt_id: str, prompt_len: int, choice: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """The greedy output positions: output token t is predicted at position prompt_len + t."""
    logprobs = choice.get("logprobs") or {}
    tokens = [_token_id(t) for t in logprobs.get("tokens") or []]
    ids = choice.get("token_ids")
    if ids is not None and [int(i) for i in ids] != tokens:
        raise ByogError(f"prompt {prompt_id}: the server's token_ids and its logprob tokens disagree")
    rows = []
    for t, (token, logprob, top) in enumerate(
        zip(tokens, logprobs.get("token_logprobs") or [], logprobs.get("top_logprobs") or [], strict=False)
    ):
        top_ids, top_lps = sort_top({_token_id(key): float(v) for key, v in (top or {}).items()}, k)
        rows.append(
            {
                "prompt": prompt_id,
                "position": prompt_len + t,
                "output": True,
                "token": token,
                "logprob": float(logprob),
                "top_ids": top_ids,
                "top_logprobs": top_lps,
            }
        )
    return rows


async def _post(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(url, json=body)
    if response.status_code != 200:
        raise ByogError(f"{url} answered HTTP {response.status_code}: {response.text[:300]}")
    return dict(response.json())


async def _run_all(base_url: str, bodies: Sequence[dict[str, Any]], composition: Composition) -> list[dict[str, Any]]:
    url = base_url.rstrip("/") + "/v1/completions"
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S) as client:
        if composition == "alone":
            return [await _post(client, url, body) for body in bodies]
        return list(await asyncio.gather(*(_post(client, url, body) for body in bodies)))


def run_pass(
    base_url: str, model: str, prompts: Sequence[TokenPath], *, k: int, max_tokens: int, composition: Composition
) -> list[dict[str, Any]]:
    """One request per prompt on one server; its raw rows (prompt positions, then output), in prompt order."""
    bodies = [request_body(model, p.ids, max_tokens, k) for p in prompts]
    answers = asyncio.run(_run_all(base_url, bodies, composition))
    rows: list[dict[str, Any]] = []
    for prompt, answer in zip(prompts, answers, strict=True):
        choice = answer["choices"][0]
        rows += prompt_rows(prompt.prompt_id, prompt.ids, choice, k)
        rows += output_rows(prompt.prompt_id, len(prompt.ids), choice, k)
    return rows


def plain_decode_wall_s(base_url: str, model: str, prompts: Sequence[TokenPath], *, max_tokens: int) -> float:
    """Seconds to generate the same tokens greedily without logprobs, all at once: the cost yardstick.

    Its own ``cache_salt`` keeps it from reading blocks an earlier request cached, so it pays the
    same prefill as a numerics pass.
    """
    bodies = [
        {
            "model": model,
            "prompt": p.ids,
            "max_tokens": max_tokens,
            "min_tokens": max_tokens,
            "ignore_eos": True,
            "temperature": 0.0,
            "cache_salt": "byog-numerics-plain-decode",
        }
        for p in prompts
    ]
    started = time.monotonic()
    asyncio.run(_run_all(base_url, bodies, "together"))
    return time.monotonic() - started
