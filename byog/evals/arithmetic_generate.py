"""byog's generated single-digit arithmetic rows: every ``a + b`` and ``a * b`` with a, b in 0..9.

A task small enough for the embedded default (SmolLM2-135M-Instruct answers about half of them)
and short to decode (a few tokens each), so an accuracy verdict there is neither floor nor ceiling.
The rows are generated, not a published benchmark; results label them so (``byog.evals.data``).
The shipped copy is ``byog/datasets/arithmetic/test.jsonl``; ``python -m byog.evals.arithmetic_generate``
prints the same bytes.
"""

from __future__ import annotations

import json
import operator
import random
from collections.abc import Callable
from typing import Any

SEED = 20261201
OPERATORS: dict[str, Callable[[int, int], int]] = {"+": operator.add, "*": operator.mul}


def generate_rows(seed: int = SEED) -> list[dict[str, Any]]:
    """All 200 questions, shuffled by ``seed`` so that any prefix (``limit``) mixes both operators."""
    rows = [
        {
            "id": f"{a}{op}{b}",
            "question": f"What is {a} {op} {b}? Answer with the number only.",
            "answer": str(fn(a, b)),
        }
        for op, fn in OPERATORS.items()
        for a in range(10)
        for b in range(10)
    ]
    random.Random(seed).shuffle(rows)
    return rows


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


if __name__ == "__main__":
    print(jsonl(generate_rows()), end="")
