"""A bundle's eval settings: reproduce sends only byog's tasks and plain sampling settings."""

from __future__ import annotations

from typing import Any

import pytest

from byog.core.errors import UsageError
from byog.plans.gen_kwargs import GEN_KWARGS, MAX_STOP_CHARS, MAX_STOP_STRINGS, vet_gen_kwargs, vet_task
from byog.plans.tasks import TASKS


def test_every_registered_task_passes() -> None:
    for task in TASKS:
        vet_task(task)


def test_an_unknown_task_is_refused_in_one_line() -> None:
    with pytest.raises(UsageError, match="not in byog's registry") as err:
        vet_task("evil\ntask")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "gen_kwargs",
    [
        {"temperature": 0, "top_p": 1.0, "top_k": 50, "min_p": 0.0, "do_sample": False, "seed": 7},
        {"max_gen_toks": 256, "max_tokens": 256},
        {"until": "\n\n"},
        {"until": ["Question:", "</s>"]},
        {},
    ],
)
def test_plain_sampling_settings_pass(gen_kwargs: dict[str, Any]) -> None:
    vet_gen_kwargs("gsm8k", gen_kwargs)


@pytest.mark.parametrize(
    ("gen_kwargs", "words"),
    [
        ({"logits_processors": ["x"]}, "not a sampling setting"),
        ({"extra_body": {"a": 1}}, "not a sampling setting"),
        ({"temperature": "0"}, "a number"),
        ({"temperature": True}, "a number"),  # a bool is not a number here
        ({"do_sample": 1}, "a number"),
        ({"top_k": -1}, "a number"),
        ({"max_tokens": 2**31}, "a number"),
        ({"until": ["x"] * (MAX_STOP_STRINGS + 1)}, "a few stop strings"),
        ({"until": ["x" * (MAX_STOP_CHARS + 1)]}, "a few stop strings"),
        ({"until": [""]}, "a few stop strings"),
        ({"until": [1]}, "a few stop strings"),
    ],
)
def test_anything_else_is_refused(gen_kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        vet_gen_kwargs("gsm8k", gen_kwargs)


def test_a_hostile_key_is_quoted_on_one_line() -> None:
    with pytest.raises(UsageError) as err:
        vet_gen_kwargs("gsm8k", {"a\nb" * 100: 1})
    assert "\n" not in str(err.value)
    assert len(str(err.value)) < 400


def test_the_list_names_what_lm_eval_reads_as_sampling() -> None:
    assert {"temperature", "until", "max_gen_toks", "do_sample"} <= set(GEN_KWARGS)
