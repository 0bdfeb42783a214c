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

``generate_rows`` makes MRCR-format rows at any target length for tests and hub-less machines;
their results are labelled "generated", never "MRCR v2".
"""

from __future__ import annotations

import json
import os
import random
import string
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Callable, Sequence

from byog.errors import ByogError, EnvironmentProblem

OFFICIAL_BINS: tuple[tuple[int, int], ...] = (
    (4096, 8192),
    (8192, 16384),
    (16384, 32768),
    (32768, 65536),
    (65536, 131072),
    (131072, 262144),
    (262144, 524288),
    (524288, 1048576),
)
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
DEFAULT_NEEDLES = 8
CHARS_PER_TOKEN_CEILING = 10  # no tokenizer packs more English characters than this into a token


def grade(response: str, answer: str, random_string_to_prepend: str) -> float:
    """The official openai/mrcr grader: 0 without the prefix, else SequenceMatcher ratio."""
    if not response.startswith(random_string_to_prepend):
        return 0.0
    response = response.removeprefix(random_string_to_prepend)
    answer = answer.removeprefix(random_string_to_prepend)
    return float(SequenceMatcher(None, response, answer).ratio())


def bin_label(total_tokens: int) -> str:
    """The card's bins from 4096 up (first and last closed, the rest [lo, hi)); powers of two below."""
    last = len(OFFICIAL_BINS) - 1
    for i, (lo, hi) in enumerate(OFFICIAL_BINS):
        closed = i in (0, last)
        if lo <= total_tokens <= hi if closed else lo <= total_tokens < hi:
            return f"{lo}-{hi}"
    if total_tokens > OFFICIAL_BINS[-1][1]:
        return f">{OFFICIAL_BINS[-1][1]}"
    hi = 4096
    while hi // 2 > total_tokens and hi > 256:
        hi //= 2
    lo = hi // 2 if hi > 256 else 0
    return f"{lo}-{hi}"


# --- token counting ------------------------------------------------------------------------------

@dataclass(frozen=True)
class TokenCounter:
    name: str  # "tiktoken:o200k_base" or "server-tokenize:<model>" (not o200k_base)
    count: Callable[[str], int]


def _tiktoken_cache(data_dir: Path | None) -> Path | None:
    return data_dir / "tiktoken" if data_dir is not None else None


def load_o200k_base(data_dir: Path | None, offline: bool) -> Any | None:
    """tiktoken's o200k_base from a cached file, or None. Never touches the network when offline."""
    try:
        import tiktoken
        import tiktoken.load as tk_load
    except ImportError:
        return None
    cache = _tiktoken_cache(data_dir)
    if cache is not None and cache.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    import hashlib

    key = hashlib.sha1(O200K_URL.encode()).hexdigest()
    cached = bool(cache_dir) and Path(cache_dir, key).is_file()
    if offline and not cached:
        return None
    try:
        return tiktoken.get_encoding("o200k_base")
    except Exception:  # no network, corrupt cache: the caller falls back and labels it
        _ = tk_load
        return None


def cache_o200k_base(data_dir: Path) -> Path:
    """Download o200k_base once into ``<data dir>/tiktoken`` (byog data pull)."""
    cache = _tiktoken_cache(data_dir)
    assert cache is not None
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        import tiktoken

        tiktoken.get_encoding("o200k_base")
    except Exception as err:
        raise EnvironmentProblem(f"could not fetch tiktoken's o200k_base ({type(err).__name__}); run `byog data pull` where the network is reachable") from None
    return cache


def server_counter(client: Any, base_url: str, model: str) -> TokenCounter:
    def count(text: str) -> int:
        resp = client.post(f"{base_url}/tokenize", json={"model": model, "prompt": text, "add_special_tokens": False})
        resp.raise_for_status()
        return int(resp.json()["count"])

    return TokenCounter(f"server-tokenize:{model} (not o200k_base)", count)


def token_counter(data_dir: Path | None, offline: bool, client: Any, base_url: str, model: str) -> TokenCounter:
    enc = load_o200k_base(data_dir, offline)
    if enc is not None:
        return TokenCounter("tiktoken:o200k_base", lambda text: len(enc.encode(text, disallowed_special=())))
    return server_counter(client, base_url, model)


def row_messages(row: dict[str, Any]) -> list[dict[str, str]]:
    messages = json.loads(row["prompt"]) if isinstance(row["prompt"], str) else row["prompt"]
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def row_total_tokens(row: dict[str, Any], counter: TokenCounter) -> int:
    """The card's count: tokens of every message's content plus the answer's."""
    return sum(counter.count(m["content"]) for m in row_messages(row)) + counter.count(row["answer"])


# --- generated rows --------------------------------------------------------------------------

_FORMS = ["poem", "short story", "blog post", "riddle", "social media post", "essay", "limerick", "product review"]
_TOPICS = ["tapirs", "rocks", "lighthouses", "glaciers", "bicycles", "owls", "teapots", "volcanoes", "libraries", "comets"]
_WORDS = (
    "quiet river morning silver stone window lantern harbor meadow thunder paper garden copper "
    "shadow orchard signal winter compass velvet canyon ember tide whisper marble feather engine "
    "sparrow cedar prism ladder violet clockwork salt horizon pebble meadowlark basalt drift"
).split()
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}


def _ordinal(k: int) -> str:
    return _ORDINAL.get(k, f"{k}th")


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _writing(rng: random.Random, form: str, topic: str, chars: int) -> str:
    lines = [f"{_a(form).capitalize()} about {topic}:"]
    while sum(len(line) + 1 for line in lines) < chars:
        words = rng.sample(_WORDS, 6)
        lines.append(f"The {words[0]} {topic[:-1] if topic.endswith('s') else topic} by the {words[1]} {words[2]}, {words[3]} and {words[4]} in the {words[5]}.")
    return "\n".join(lines)


def generate_rows(
    n_rows: int,
    target_tokens: int,
    *,
    n_needles: int = DEFAULT_NEEDLES,
    seed: int = 0,
    chars_per_token: float = 4.0,
    label: str = "[byog generated MRCR-format row, not openai/mrcr]",
) -> list[dict[str, Any]]:
    """Rows in openai/mrcr's schema whose prompt + answer is about ``target_tokens`` long.

    Length is set in characters (``chars_per_token`` per token), so the real token count depends on
    the tokenizer; the runner measures and bins it. Each conversation holds ``n_needles`` identical
    asks ("write a {form} about {topic}") among distractors that share the form or the topic, and
    ends by asking for the k-th reply, prefixed with a random string.
    """
    rows = []
    for index in range(n_rows):
        rng = random.Random(f"{seed}:{target_tokens}:{index}")
        form, topic = rng.choice(_FORMS), rng.choice(_TOPICS)
        n_distractors = max(4, n_needles // 2)
        asks = [(form, topic)] * n_needles
        for _ in range(n_distractors):
            asks.append(rng.choice([(rng.choice([f for f in _FORMS if f != form]), topic), (form, rng.choice([t for t in _TOPICS if t != topic]))]))
        rng.shuffle(asks)
        reply_chars = max(60, int(target_tokens * chars_per_token / (len(asks) + 1)) - 40)
        messages: list[dict[str, str]] = []
        needle_indices: list[int] = []
        for i, (f, t) in enumerate(asks):
            prefix = f"{label} " if i == 0 else ""
            messages.append({"role": "user", "content": f"{prefix}Write {_a(f)} about {t}."})
            if (f, t) == (form, topic):
                needle_indices.append(len(messages))
            messages.append({"role": "assistant", "content": _writing(rng, f, t, reply_chars)})
        k = rng.randint(1, n_needles)
        prefix = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(10))
        messages.append({
            "role": "user",
            "content": f"Prepend {prefix} to the {_ordinal(k)} (1 indexed) {form} about {topic}. Do not include any other text in your response.",
        })
        desired = needle_indices[k - 1]
        rows.append({
            "prompt": json.dumps(messages, ensure_ascii=False),
            "answer": prefix + messages[desired]["content"],
            "random_string_to_prepend": prefix,
            "n_needles": n_needles,
            "desired_msg_index": desired,
            "total_messages": len(messages),
            "n_chars": sum(len(m["content"]) for m in messages),
        })
    return rows


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
            return resp.json()
        except ByogError:
            raise
        except Exception as err:  # transient: connection reset, 5xx
            last = err
            time.sleep(min(2 ** attempt, 10))
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
    for item_id, row in zip(ids, rows):
        if n_needles is not None and int(row["n_needles"]) != n_needles:
            skipped["needles"] += 1
            continue
        if int(row.get("n_chars") or 0) > CHARS_PER_TOKEN_CEILING * max_model_len:
            skipped["over_context"] += 1  # far too long for any tokenizer: skip without asking the server
            continue
        messages = row_messages(row)
        resp = client.post(f"{base_url}/tokenize", json={"model": model, "messages": messages, "add_generation_prompt": True})
        resp.raise_for_status()
        prompt_tokens = int(resp.json()["count"])
        resp = client.post(f"{base_url}/tokenize", json={"model": model, "prompt": row["answer"], "add_special_tokens": False})
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
