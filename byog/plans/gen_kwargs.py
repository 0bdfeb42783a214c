"""Which of a bundle's eval settings ``byog reproduce`` sends, and which tasks it runs.

A plan's ``gen_kwargs`` are laid over the task's own generation settings and reach the server in
every eval request: lm-eval's OpenAI client (``lm_eval/models/openai_completions.py``,
``_create_payload``) reads ``until``, ``do_sample``, ``temperature``, ``max_gen_toks`` and
``max_tokens`` and puts every other key into the request body as it is, so a bundle could send
``logits_processors``, ``extra_body`` or a ``response_format`` it chose. A reproduction sends only
sampling settings, each a number (or ``until``, a few stop strings), and only tasks of byog's
registry (``byog.plans.tasks``): anything else is refused in one sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from byog.core.errors import UsageError
from byog.core.safe_text import one_line
from byog.plans.tasks import TASKS

MAX_STOP_STRINGS = 16
MAX_STOP_CHARS = 200


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


def _stops(value: Any) -> bool:
    items = [value] if isinstance(value, str) else value
    return (
        isinstance(items, list)
        and len(items) <= MAX_STOP_STRINGS
        and all(isinstance(s, str) and 0 < len(s) <= MAX_STOP_CHARS for s in items)
    )


# lm-eval's generation_kwargs that are sampling settings, and what each value may be.
GEN_KWARGS: dict[str, Callable[[Any], bool]] = {
    "temperature": _number,
    "top_p": _number,
    "top_k": _count,
    "min_p": _number,
    "do_sample": lambda value: isinstance(value, bool),
    "max_gen_toks": _count,
    "max_tokens": _count,
    "until": _stops,
    "seed": _count,
}


def vet_task(task: str) -> None:
    """Refuse an eval task that is not in byog's registry."""
    if task not in TASKS:
        raise UsageError(
            f"the bundle's eval task '{one_line(task)}' is not in byog's registry ({', '.join(sorted(TASKS))}); "
            "byog reproduce runs only byog's tasks"
        )


def vet_gen_kwargs(task: str, gen_kwargs: dict[str, Any]) -> None:
    """Refuse the first of an eval's ``gen_kwargs`` that is not a sampling setting with a plain value."""
    for key, value in gen_kwargs.items():
        check = GEN_KWARGS.get(key)
        name = one_line(str(key), 80)
        if check is None:
            raise UsageError(
                f"the bundle's eval '{one_line(task)}' sets gen_kwargs.{name}, which is not a sampling setting "
                f"byog sends ({', '.join(GEN_KWARGS)}); byog reproduce sends only those"
            )
        if not check(value):
            raise UsageError(
                f"the bundle's eval '{one_line(task)}' sets gen_kwargs.{name} to something other than "
                + ("a few stop strings" if key == "until" else "a number")
                + "; byog reproduce sends only plain sampling settings"
            )
