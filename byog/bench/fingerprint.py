"""A server's greedy fingerprint: what it generates for fixed prompts at temperature 0.

Taken before a server's first sleep and after every wake-up (docs/interleave.md, "Wake integrity"):
the prefix cache is reset first (``POST /reset_prefix_cache``, dev mode; a warm cache changes greedy
outputs), then each prompt is sent with ``temperature 0``, ``ignore_eos`` (every prompt generates
``max_tokens``, so two fingerprints compare position by position), ``logprobs`` and
``return_tokens_as_token_ids``. ``batch`` 1 sends the prompts one at a time (exact across a wake on
vLLM's CUDA build); a larger batch sends that many at once (not exact even before a sleep, so it is
judged against the server's own A/A envelope: byog.analysis.wake).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from byog.bench.server_api import reset_prefix_cache
from byog.core.errors import ByogError
from byog.core.safe_text import one_line

PROMPTS = 32
MAX_TOKENS = 32
TOP_K = 5
_TIMEOUT_S = 300.0

# Fixed seed texts; a prompt of the plan's input length repeats its text up to that many words.
_SEEDS = (
    "The history of the printing press begins",
    "In a small village by the sea, an old fisherman",
    "To compute the greatest common divisor of two integers,",
    "The mitochondria is an organelle that",
    "Once upon a time, in a kingdom far away,",
    "A recipe for bread needs flour, water, salt and",
    "The rules of chess say that a pawn",
    "Photosynthesis converts light energy into",
)


def fingerprint_prompts(n: int = PROMPTS, words: int = 0) -> list[str]:
    """``n`` fixed prompts; with ``words`` > 0 each is extended to about that many words (the plan's input shape)."""
    out = []
    for i in range(n):
        text = f"{_SEEDS[i % len(_SEEDS)]} (case {i})"
        while len(text.split()) < words:
            text = f"{text} {_SEEDS[(i + len(text)) % len(_SEEDS)]}"
        out.append(" ".join(text.split()[:words]) if words else text)
    return out


def _token_id(token: str) -> int:
    """``token_id:N`` (return_tokens_as_token_ids) to N."""
    try:
        return int(str(token).rsplit(":", 1)[1])
    except (IndexError, ValueError):
        raise ByogError(f"fingerprint: the server named a token {one_line(str(token), 60)!r}, not token_id:N") from None


def _one(client: httpx.Client, base_url: str, model: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
        "logprobs": TOP_K,
        "return_tokens_as_token_ids": True,
    }
    try:
        response = client.post(f"{base_url}/v1/completions", json=body, timeout=_TIMEOUT_S)
    except httpx.HTTPError as err:
        raise ByogError(f"fingerprint: POST /v1/completions failed: {err}") from None
    if response.status_code != 200:
        raise ByogError(f"fingerprint: /v1/completions answered {response.status_code} {one_line(response.text, 200)}")
    try:
        logprobs = response.json()["choices"][0]["logprobs"]
        tokens = [_token_id(t) for t in logprobs["tokens"]]
        chosen = [float(x) for x in logprobs["token_logprobs"]]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ByogError(
            f"fingerprint: /v1/completions answered without logprobs: {one_line(response.text, 200)}"
        ) from None
    return {"tokens": tokens, "logprobs": chosen}


def take_fingerprint(
    base_url: str, model: str, prompts: list[str], batch: int = 1, max_tokens: int = MAX_TOKENS
) -> dict[str, Any]:
    """The fingerprint record: ``batch``, ``max_tokens``, ``cache_reset``, ``seconds`` and, per prompt in
    order, the greedy ``tokens`` and each one's ``logprobs`` (the top, i.e. chosen, token's)."""
    cache_reset = reset_prefix_cache(base_url)
    t0 = time.perf_counter()
    with httpx.Client() as client:
        if batch <= 1:
            answers = [_one(client, base_url, model, p, max_tokens) for p in prompts]
        else:
            answers = []
            with ThreadPoolExecutor(max_workers=batch) as pool:
                for start in range(0, len(prompts), batch):
                    chunk = prompts[start : start + batch]
                    answers += list(pool.map(lambda p: _one(client, base_url, model, p, max_tokens), chunk))
    return {
        "batch": max(batch, 1),
        "max_tokens": max_tokens,
        "cache_reset": cache_reset,
        "seconds": round(time.perf_counter() - t0, 4),
        "tokens": [a["tokens"] for a in answers],
        "logprobs": [a["logprobs"] for a in answers],
    }
