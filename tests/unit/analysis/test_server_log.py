"""Why a server failed, read from its log: the parser's refusal of a command line."""

from __future__ import annotations

from byog.analysis.server_log import root_cause


def test_a_refused_command_line_is_vllms_parser_sentence() -> None:
    log = (
        "INFO 12-01 startup\n"
        "usage: vllm serve [model_tag] [options]\n"
        "vllm serve: error: argument --dtype: invalid choice: 'float17' (choose from auto, bfloat16, float16)\n"
    )
    assert root_cause(log) == (
        "vLLM refused its arguments: argument --dtype: invalid choice: 'float17' (choose from auto, bfloat16, float16)"
    )


def test_an_exception_line_still_wins_over_the_parser() -> None:
    log = "x: error: something\nERROR 12-01 [core.py:1] ValueError: fp8 KV cache is not supported here\n"
    assert root_cause(log) == "ValueError: fp8 KV cache is not supported here"
