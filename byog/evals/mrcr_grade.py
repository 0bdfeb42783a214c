"""MRCR's official grading and binning (openai/mrcr dataset card).

``grade``: 0 unless the reply starts with the row's random prefix; else difflib's ratio of the
reply (prefix removed) to the answer (prefix removed). Bins: prompt + answer tokens counted with
tiktoken ``o200k_base``, in [4096, 8192], (8192, 16384) ... up to 1M."""

from __future__ import annotations

from difflib import SequenceMatcher

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
