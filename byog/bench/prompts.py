"""Prompts of exactly ISL tokens: random token ids, or real text from a dataset, labelled as such.

Completions API: the prompt is sent as a list of token ids, so the server sees exactly ISL
tokens (no tokenizer round trip, no BOS added); the server's ``usage.prompt_tokens`` confirms it
per request. Chat API: the ids are decoded into the user message and the server's ``/tokenize``
(with the chat template) says what the prompt will cost; that count is the expected ``n_in``.

Prompts depend only on (seed, point id, request index), so every server of a plan gets the same
prompts at the same point (a fair A/B) and different points never share a prefix.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from byog.core.errors import EnvironmentProblem
from byog.core.settings import resolve_data_dir

# Low ids are control/special tokens in most vocabularies; random prompts avoid them.
LOWEST_RANDOM_ID = 256
DATASET_FILES = {"mt_bench": ("mt_bench", "question.jsonl"), "gsm8k": ("gsm8k", "test.jsonl")}


@dataclass(frozen=True)
class Prompt:
    body: Any  # list[int] for completions, list of chat messages for chat
    expected_n_in: int


def dataset_texts(name: str, data_dir: Path) -> list[str]:
    folder, filename = DATASET_FILES[name]
    path = data_dir / folder / filename
    if not path.is_file():
        raise EnvironmentProblem(f"dataset file {path} is missing")
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            texts.append(row["turns"][0] if name == "mt_bench" else row["question"])
    return texts


def dataset_passages(name: str, data_dir: Path) -> list[str]:
    """One self-contained passage per row: GSM8K's question with its worked answer, MT-Bench's first turn."""
    if name != "gsm8k":
        return dataset_texts(name, data_dir)
    folder, filename = DATASET_FILES[name]
    path = data_dir / folder / filename
    if not path.is_file():
        raise EnvironmentProblem(f"dataset file {path} is missing")
    return [
        f"Question: {row['question']}\nAnswer: {row['answer']}"
        for row in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    ]


def prompt_seed(seed: int, point_id: str) -> list[int]:
    return [seed, zlib.crc32(point_id.encode())]


def random_token_ids(
    count: int, isl: int, vocab_size: int, seed: list[int], exclude: frozenset[int] = frozenset()
) -> list[list[int]]:
    """``count`` prompts of exactly ``isl`` ids drawn uniformly from [LOWEST_RANDOM_ID, vocab_size) minus
    ``exclude``."""
    low = min(LOWEST_RANDOM_ID, max(vocab_size // 2, 1))
    rng = np.random.default_rng(seed)
    ids = rng.integers(low, vocab_size, size=(count, isl))
    if exclude:
        bad = np.isin(ids, list(exclude))
        while bad.any():
            ids[bad] = rng.integers(low, vocab_size, size=int(bad.sum()))
            bad = np.isin(ids, list(exclude))
    rows: list[list[int]] = ids.tolist()
    return rows


class ServerTokenizer:
    """The server's own /tokenize and /detokenize (so the client needs no tokenizer files)."""

    def __init__(self, base_url: str, model: str) -> None:
        self.base_url, self.model = base_url.rstrip("/"), model
        self._http = httpx.Client(timeout=60.0)

    def close(self) -> None:
        self._http.close()

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            response = self._http.post(self.base_url + path, json={"model": self.model, **body})
        except httpx.HTTPError as err:
            raise EnvironmentProblem(f"{self.base_url}{path} did not answer: {err}") from None
        if response.status_code != 200:
            return None
        return response.json()

    def encode(self, text: str, *, special_tokens: bool = False) -> list[int]:
        """``special_tokens``: as the server tokenizes a text prompt (a BOS where the model adds one)."""
        found = self._post("/tokenize", {"prompt": text, "add_special_tokens": special_tokens})
        if found is None:
            raise EnvironmentProblem(f"{self.base_url}/tokenize refused a prompt; byog needs it to build prompts")
        return list(found["tokens"])

    def decode(self, ids: list[int]) -> str:
        found = self._post("/detokenize", {"tokens": ids})
        if found is None:
            raise EnvironmentProblem(f"{self.base_url}/detokenize refused token ids; byog needs it for chat prompts")
        return str(found["prompt"])

    def chat_prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        found = self._post("/tokenize", {"messages": messages, "add_generation_prompt": True})
        if found is None:
            raise EnvironmentProblem(f"{self.base_url}/tokenize refused chat messages; byog needs it for chat prompts")
        return int(found["count"])

    def _decodes(self, first_id: int, span: int = 8) -> bool:
        """vLLM's /detokenize answers "" (not an error) for ids past the vocabulary; any text means inside."""
        found = self._post("/detokenize", {"tokens": list(range(first_id, first_id + span))})
        return bool(found and found.get("prompt"))

    def vocab_size(self) -> int:
        """Where ids stop decoding to text, by binary search over /detokenize (about 40 requests).

        Only used without tokenizer files; 8 ids at a time so a few empty special tokens do not
        end the search early.
        """
        if not self._decodes(LOWEST_RANDOM_ID):
            raise EnvironmentProblem(f"{self.base_url}/detokenize does not decode ids; pass --tokenizer")
        lo, hi = LOWEST_RANDOM_ID, LOWEST_RANDOM_ID * 2
        while self._decodes(hi):
            lo, hi = hi, hi * 2
            if hi > 1 << 24:
                raise EnvironmentProblem("could not find the vocabulary size through /detokenize; pass --tokenizer")
        while hi - lo > 1:  # invariant: ids from lo decode, ids from hi do not
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self._decodes(mid) else (lo, mid)
        return lo + 1


def vocabulary(tokenizer_path: str | None, server: ServerTokenizer) -> tuple[int, frozenset[int]]:
    """(vocab size, special ids) from the tokenizer files when given, else from the server."""
    if tokenizer_path:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(tokenizer_path)
            return len(tok), frozenset(int(i) for i in tok.all_special_ids)
        except Exception:  # a tokenizer transformers cannot load: the server knows its own
            pass
    return server.vocab_size(), frozenset()


def build_prompts(
    *,
    kind: str,
    dataset: str | None,
    api: str,
    isl: int,
    count: int,
    seed: int,
    point_id: str,
    server: ServerTokenizer,
    tokenizer_path: str | None = None,
    data_dir: Path | None = None,
    repeat: bool = False,
    as_text: bool = False,
) -> list[Prompt]:
    """``count`` prompts for one point (warm-up requests first). Every prompt is ISL tokens of content.

    ``as_text`` (random prompts, completions API): each prompt goes as text that the server
    tokenizes to exactly ISL tokens (``RandomPrompts.send``).
    """
    seeds = prompt_seed(seed, point_id)
    if kind == "random":
        vocab_size, specials = vocabulary(tokenizer_path, server)
        id_lists = random_token_ids(count, isl, vocab_size, seeds, specials)
        if as_text and api == "completions":
            spares = random_token_ids(count, isl, vocab_size, [*seeds, 1], specials)
            return [
                Prompt(text_of_exactly(ids, isl, server, spare), isl)
                for ids, spare in zip(id_lists, spares, strict=True)
            ]
    elif repeat:
        assert dataset is not None
        id_lists = _repeated_ids(dataset, isl, count, seeds, server, resolve_data_dir(data_dir))
    else:
        assert dataset is not None
        id_lists = _dataset_ids(dataset, isl, count, seeds, server, resolve_data_dir(data_dir))
    if api == "completions":
        return [Prompt(ids, isl) for ids in id_lists]
    prompts = []
    for ids in id_lists:
        messages = [{"role": "user", "content": server.decode(ids)}]
        prompts.append(Prompt(messages, server.chat_prompt_tokens(messages)))
    return prompts


def sends_text(prompts: object) -> bool:
    """Whether a point's prompts (a plan's ``prompts`` entry) go to the server as text to tokenize."""
    return getattr(prompts, "send", "ids") == "text"


TEXT_ROUNDS = 8  # decode/re-encode rounds before a text prompt of exactly ISL tokens is given up


def text_of_exactly(ids: list[int], isl: int, server: ServerTokenizer, spare: list[int]) -> str:
    """Text the server tokenizes to exactly ``isl`` tokens, made from ``ids``.

    Random ids do not survive a decode and re-encode (neighbouring pieces merge or split), so
    the re-encoded ids are cut to ISL, or topped up from ``spare`` (more random ids), and the
    round repeats until the count holds; it settles in a round or two.
    """
    for _ in range(TEXT_ROUNDS):
        text = server.decode(ids)
        encoded = server.encode(text, special_tokens=True)
        if len(encoded) == isl:
            return text
        ids = encoded[:isl] if len(encoded) > isl else encoded + spare[: isl - len(encoded)]
    raise EnvironmentProblem(
        f"no text of exactly {isl} tokens after {TEXT_ROUNDS} rounds of decode and re-encode; "
        "send the random prompts as ids"
    )


def _dataset_ids(
    name: str, isl: int, count: int, seeds: list[int], server: ServerTokenizer, data_dir: Path
) -> list[list[int]]:
    """Each prompt starts at a seeded dataset row and concatenates following rows until ISL tokens."""
    texts = dataset_texts(name, data_dir)
    starts = np.random.default_rng(seeds).integers(0, len(texts), size=count).tolist()
    cache: dict[int, list[int]] = {}

    def ids_of(i: int) -> list[int]:
        if i not in cache:
            cache[i] = server.encode(texts[i] + "\n\n")
        return cache[i]

    out = []
    for start in starts:
        ids: list[int] = []
        row = start
        while len(ids) < isl:
            ids.extend(ids_of(row % len(texts)))
            row += 1
        out.append(ids[:isl])
    return out


def _repeated_ids(
    name: str, isl: int, count: int, seeds: list[int], server: ServerTokenizer, data_dir: Path
) -> list[list[int]]:
    """Each prompt is one seeded dataset passage, repeated (blank line between copies) until ISL tokens."""
    passages = dataset_passages(name, data_dir)
    rows = np.random.default_rng(seeds).integers(0, len(passages), size=count).tolist()
    cache: dict[int, list[int]] = {}
    out = []
    for row in rows:
        if row not in cache:
            cache[row] = server.encode(passages[row] + "\n\n")
        one = cache[row]
        out.append((one * (isl // len(one) + 1))[:isl])
    return out


def prompts_label(kind: str, dataset: str | None, repeat: bool = False, as_text: bool = False) -> str:
    """How results say where their prompts came from: ``random-ids``, ``random-text``, ``dataset:<name>``
    or ``dataset:<name>:repeated``."""
    if kind == "random":
        return "random-text" if as_text else "random-ids"
    return f"dataset:{dataset}:repeated" if repeat else f"dataset:{dataset}"
