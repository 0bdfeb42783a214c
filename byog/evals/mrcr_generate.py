"""MRCR-format rows at any target length, for tests and hub-less machines.

Their results are labelled "generated", never "MRCR v2"."""

from __future__ import annotations

import json
import random
import string
from typing import Any

DEFAULT_NEEDLES = 8


_FORMS = ["poem", "short story", "blog post", "riddle", "social media post", "essay", "limerick", "product review"]


_TOPICS = [
    "tapirs",
    "rocks",
    "lighthouses",
    "glaciers",
    "bicycles",
    "owls",
    "teapots",
    "volcanoes",
    "libraries",
    "comets",
]


_WORDS = [
    "quiet",
    "river",
    "morning",
    "silver",
    "stone",
    "window",
    "lantern",
    "harbor",
    "meadow",
    "thunder",
    "paper",
    "garden",
    "copper",
    "shadow",
    "orchard",
    "signal",
    "winter",
    "compass",
    "velvet",
    "canyon",
    "ember",
    "tide",
    "whisper",
    "marble",
    "feather",
    "engine",
    "sparrow",
    "cedar",
    "prism",
    "ladder",
    "violet",
    "clockwork",
    "salt",
    "horizon",
    "pebble",
    "meadowlark",
    "basalt",
    "drift",
]


_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}


def ordinal(k: int) -> str:
    return _ORDINAL.get(k, f"{k}th")


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _writing(rng: random.Random, form: str, topic: str, chars: int) -> str:
    lines = [f"{_a(form).capitalize()} about {topic}:"]
    while sum(len(line) + 1 for line in lines) < chars:
        words = rng.sample(_WORDS, 6)
        lines.append(
            f"The {words[0]} {topic[:-1] if topic.endswith('s') else topic} by the {words[1]} {words[2]}, {words[3]} "
            f"and {words[4]} in the {words[5]}."
        )
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
            asks.append(
                rng.choice(
                    [
                        (rng.choice([f for f in _FORMS if f != form]), topic),
                        (form, rng.choice([t for t in _TOPICS if t != topic])),
                    ]
                )
            )
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
        messages.append(
            {
                "role": "user",
                "content": f"Prepend {prefix} to the {ordinal(k)} (1 indexed) {form} about {topic}. Do not include "
                "any other text in your response.",
            }
        )
        desired = needle_indices[k - 1]
        rows.append(
            {
                "prompt": json.dumps(messages, ensure_ascii=False),
                "answer": prefix + messages[desired]["content"],
                "random_string_to_prepend": prefix,
                "n_needles": n_needles,
                "desired_msg_index": desired,
                "total_messages": len(messages),
                "n_chars": sum(len(m["content"]) for m in messages),
            }
        )
    return rows
