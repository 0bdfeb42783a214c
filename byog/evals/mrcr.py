"""MRCR: byog's runner for openai/mrcr (multi-round co-reference resolution) with the official grader.

A row (openai/mrcr schema): ``prompt`` (JSON string of chat messages), ``answer`` (the expected
reply: random_string_to_prepend + the desired earlier assistant message), ``random_string_to_prepend``,
``n_needles``, ``desired_msg_index``, ``total_messages``, ``n_chars``. The model gets the messages
verbatim; the official grader scores the reply (``grade``).

Bins: the dataset card buckets rows by prompt + answer tokens counted with tiktoken ``o200k_base``
(sum over message contents, as the card's ``n_tokens``), in [4096, 8192], (8192, 16384) ...
up to 1M. ``o200k_base`` is loaded offline only from a cached file (``byog data pull`` stores it
under ``<data dir>/tiktoken``); when it is not there the server's ``/tokenize`` counts instead and
results say so (``token_counter``). Rows whose prompt and answer do not fit the server's
max_model_len (server tokens) are skipped and counted, so bins stop at the server's context.

Grading and bins: ``byog.evals.mrcr_grade``; token counting: ``byog.evals.mrcr_tokens``;
generated rows (labelled "generated", never "MRCR v2"): ``byog.evals.mrcr_generate``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from byog.core.errors import ByogError
from byog.evals.mrcr_grade import grade
from byog.evals.mrcr_tokens import TokenCounter

CHARS_PER_TOKEN_CEILING = 10  # no tokenizer packs more English characters than this into a token


# --- token counting ------------------------------------------------------------------------------


def row_messages(row: dict[str, Any]) -> list[dict[str, str]]:
    messages = json.loads(row["prompt"]) if isinstance(row["prompt"], str) else row["prompt"]
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def row_total_tokens(row: dict[str, Any], counter: TokenCounter) -> int:
    """The card's count: tokens of every message's content plus the answer's."""
    return sum(counter.count(m["content"]) for m in row_messages(row)) + counter.count(row["answer"])


# --- generated rows --------------------------------------------------------------------------


# --- the runner ------------------------------------------------------------------------------


@dataclass
class MrcrItem:
    item_id: str
    row: dict[str, Any]
    total_tokens: int  # by the token counter (bins)
    prompt_server_tokens: int
    answer_server_tokens: int


def _post_chat(client: Any, base_url: str, payload: dict[str, Any], retries: int) -> dict[str, Any]:
    last: Exception | None = None
    for attempt in range(retries + 1):
        try:
            resp = client.post(f"{base_url}/v1/chat/completions", json=payload)
            if resp.status_code >= 500:
                raise RuntimeError(f"HTTP {resp.status_code}")
            if resp.status_code >= 400:
                raise ByogError(f"the server refused an MRCR request (HTTP {resp.status_code}): {resp.text[:200]}")
            reply = resp.json()
            if not isinstance(reply, dict):
                raise ByogError(f"the server's MRCR reply is not a JSON object: {resp.text[:200]}")
            return reply
        except ByogError:
            raise
        except Exception as err:  # transient: connection reset, 5xx
            last = err
            time.sleep(min(2**attempt, 10))
    raise ByogError(f"MRCR request failed after {retries + 1} tries: {last}")


def prepare_items(
    rows: Sequence[dict[str, Any]],
    ids: Sequence[str],
    *,
    counter: TokenCounter,
    client: Any,
    base_url: str,
    model: str,
    max_model_len: int,
    n_needles: int | None,
) -> tuple[list[MrcrItem], dict[str, int]]:
    """Count tokens, keep rows with ``n_needles`` that fit the server's context, in row order."""
    items: list[MrcrItem] = []
    skipped = {"needles": 0, "over_context": 0}
    for item_id, row in zip(ids, rows, strict=True):
        if n_needles is not None and int(row["n_needles"]) != n_needles:
            skipped["needles"] += 1
            continue
        if int(row.get("n_chars") or 0) > CHARS_PER_TOKEN_CEILING * max_model_len:
            skipped["over_context"] += 1  # far too long for any tokenizer: skip without asking the server
            continue
        messages = row_messages(row)
        resp = client.post(
            f"{base_url}/tokenize", json={"model": model, "messages": messages, "add_generation_prompt": True}
        )
        resp.raise_for_status()
        prompt_tokens = int(resp.json()["count"])
        resp = client.post(
            f"{base_url}/tokenize", json={"model": model, "prompt": row["answer"], "add_special_tokens": False}
        )
        resp.raise_for_status()
        answer_tokens = int(resp.json()["count"])
        if prompt_tokens + answer_tokens > max_model_len:
            skipped["over_context"] += 1
            continue
        items.append(MrcrItem(item_id, row, row_total_tokens(row, counter), prompt_tokens, answer_tokens))
    return items, skipped


def run_pass(
    items: Sequence[MrcrItem],
    *,
    client: Any,
    base_url: str,
    model: str,
    seed: int,
    temperature: float,
    top_p: float | None,
    max_model_len: int,
    num_concurrent: int,
    max_retries: int = 3,
) -> list[dict[str, Any]]:
    """One pass over the items with one seed; returns response text, score and usage per item."""

    def one(item: MrcrItem) -> dict[str, Any]:
        # Room for the answer plus slack, never past the context (the card sets no max_tokens).
        max_tokens = max(1, min(max_model_len - item.prompt_server_tokens, item.answer_server_tokens * 2 + 64))
        payload: dict[str, Any] = {
            "model": model,
            "messages": row_messages(item.row),
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
        }
        if top_p is not None:
            payload["top_p"] = top_p
        body = _post_chat(client, base_url, payload, max_retries)
        text = body["choices"][0]["message"].get("content") or ""
        usage = body.get("usage") or {}
        return {
            "score": grade(text, item.row["answer"], item.row["random_string_to_prepend"]),
            "n_output_tokens": usage.get("completion_tokens"),
            "prefix_ok": text.startswith(item.row["random_string_to_prepend"]),
        }

    with ThreadPoolExecutor(max_workers=max(1, num_concurrent)) as pool:
        return list(pool.map(one, items))
