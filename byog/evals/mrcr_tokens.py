"""Counting MRCR tokens as the dataset card does (tiktoken ``o200k_base``), offline.

``o200k_base`` is loaded offline only from a cached file (``byog data pull`` stores it under
``<data dir>/tiktoken``); when it is not there the server's ``/tokenize`` counts instead and
results say so (``token_counter``)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from byog.core.errors import EnvironmentProblem

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


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
    except ImportError:
        return None
    cache = _tiktoken_cache(data_dir)
    if cache is not None and cache.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    key = hashlib.sha1(O200K_URL.encode()).hexdigest()
    cached = Path(cache_dir, key).is_file() if cache_dir else False
    if offline and not cached:
        return None
    try:
        return tiktoken.get_encoding("o200k_base")
    except Exception:  # no network, corrupt cache: the caller falls back and labels it
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
        raise EnvironmentProblem(
            f"could not fetch tiktoken's o200k_base ({type(err).__name__}); run `byog data pull` where the network is "
            "reachable"
        ) from None
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
