"""`byog bench`'s flags: lists of numbers and the closed choices are refused in one sentence, before
any server is asked."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from byog.cli import app
from byog.cli.bench import parse_float_list, parse_int_list
from byog.core.errors import UsageError

runner = CliRunner()
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: a flag error must come before any connection


def test_number_lists_parse() -> None:
    assert parse_int_list("1,2, 4,", "--isl") == [1, 2, 4]
    assert parse_float_list("0.5,2", "--rates") == [0.5, 2.0]


@pytest.mark.parametrize(
    ("text", "words"), [("1,x", "whole numbers"), ("", "positive"), ("0", "positive"), ("2,-1", "positive")]
)
def test_bad_int_lists_are_refused(text: str, words: str) -> None:
    with pytest.raises(UsageError, match=f"--isl must be {words}"):
        parse_int_list(text, "--isl")


@pytest.mark.parametrize(("text", "words"), [("fast", "numbers"), ("0", "positive"), ("nan", "positive")])
def test_bad_float_lists_are_refused(text: str, words: str) -> None:
    with pytest.raises(UsageError, match=f"--rates must be {words}"):
        parse_float_list(text, "--rates")


@pytest.mark.parametrize(
    ("flag", "value", "sentence"),
    [
        ("--api", "embeddings", "--api must be completions or chat, not 'embeddings'"),
        ("--request-body", "openai", "--request-body must be byog or vllm, not 'openai'"),
        ("--prompts", "sharegpt", "--prompts must be random, random-text, mt_bench or gsm8k, not 'sharegpt'"),
    ],
)
def test_a_closed_choice_is_refused_in_one_sentence(flag: str, value: str, sentence: str) -> None:
    result = runner.invoke(app, ["bench", "--endpoint", UNREACHABLE, flag, value])
    assert result.exit_code == 2
    assert sentence in " ".join(result.output.split())
    assert "Traceback" not in result.output
