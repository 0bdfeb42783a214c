"""Raw rows from vLLM 0.32's real answer shapes (excerpts of a CPU server's JSON), byog/correctness/differential.py."""

from __future__ import annotations

import pytest

from byog.core.errors import ByogError
from byog.correctness.differential import output_rows, prompt_rows, request_body

# /v1/completions, prompt [1, 504, 3458, 282], logprobs 5, return_tokens_as_token_ids, return_token_ids (first 2 tokens)
GENERATED = {
    "logprobs": {
        "token_logprobs": [-0.5635173320770264, -0.6167837977409363],
        "tokens": ["token_id:4649", "token_id:314"],
        "top_logprobs": [
            {
                "token_id:4649": -0.5635173320770264,
                "token_id:260": -3.5635173320770264,
                "token_id:3275": -3.8135173320770264,
                "token_id:1910": -3.8760173320770264,
                "token_id:3432": -3.9385173320770264,
            },
            {
                "token_id:314": -0.6167837977409363,
                "token_id:28": -2.116783857345581,
                "token_id:365": -2.866783857345581,
                "token_id:30": -3.241783857345581,
                "token_id:4271": -3.741783857345581,
            },
        ],
    },
    "token_ids": [4649, 314],
}
# the same server, prompt_logprobs 5 on [1, 504, 3458]: entry 0 is null, each entry holds the
# path's own token (any rank) and the top 5 (note the tie between 51 and 68 at rank 1 and 2)
SCORED = {
    "prompt_logprobs": [
        None,
        {
            "504": {"logprob": -8.371099472045898, "rank": 215, "decoded_token": "The"},
            "29": {"logprob": -0.9960998296737671, "rank": 1, "decoded_token": "-"},
            "28": {"logprob": -1.996099829673767, "rank": 2, "decoded_token": ","},
            "198": {"logprob": -3.2460999488830566, "rank": 3, "decoded_token": "\n"},
            "284": {"logprob": -3.3710999488830566, "rank": 4, "decoded_token": " and"},
            "260": {"logprob": -3.7460999488830566, "rank": 5, "decoded_token": " the"},
        },
        {
            "3458": {"logprob": -13.298721313476562, "rank": 9572, "decoded_token": "rong"},
            "68": {"logprob": -4.298721790313721, "rank": 2, "decoded_token": "T"},
            "51": {"logprob": -4.298721790313721, "rank": 1, "decoded_token": "C"},
            "100": {"logprob": -4.423721790313721, "rank": 3, "decoded_token": "t"},
            "50": {"logprob": -4.423721790313721, "rank": 4, "decoded_token": "B"},
            "67": {"logprob": -4.548721790313721, "rank": 5, "decoded_token": "S"},
        },
    ]
}


def test_one_request_asks_for_both_families() -> None:
    body = request_body("m", [1, 504, 3458], max_tokens=32, k=5)
    assert body["logprobs"] == body["prompt_logprobs"] == 5 and body["temperature"] == 0.0
    assert body["max_tokens"] == body["min_tokens"] == 32 and body["ignore_eos"] is True
    assert body["return_tokens_as_token_ids"] is True


def test_output_rows_put_output_token_t_at_prompt_length_plus_t() -> None:
    rows = output_rows("p", 4, GENERATED, k=5)
    assert [r["position"] for r in rows] == [4, 5] and all(r["output"] for r in rows)
    assert [r["token"] for r in rows] == [4649, 314]
    assert rows[0]["top_ids"] == [4649, 260, 3275, 1910, 3432]
    assert rows[1]["logprob"] == pytest.approx(-0.6167837977409363)


def test_prompt_rows_keep_the_own_token_and_the_sorted_top_k() -> None:
    rows = prompt_rows("p", [1, 504, 3458], SCORED, k=5)
    assert [(r["position"], r["token"], r["output"]) for r in rows] == [(1, 504, False), (2, 3458, False)]
    assert rows[0]["logprob"] == pytest.approx(-8.371099472045898)
    assert rows[0]["top_ids"] == [29, 28, 198, 284, 260]  # the own token (rank 215) is not in the top 5
    assert rows[1]["top_ids"] == [51, 68, 50, 100, 67]  # ties by lower id, as vLLM ranked 51 before 68


def test_prompt_rows_refuse_an_answer_for_another_prompt() -> None:
    with pytest.raises(ByogError, match="prompt_logprobs for a prompt of 4 tokens"):
        prompt_rows("p", [1, 504, 3458, 9], SCORED, k=5)
    with pytest.raises(ByogError, match="no logprob for its own token"):
        prompt_rows("p", [1, 505, 3458], SCORED, k=5)
    with pytest.raises(ByogError, match="no prompt_logprobs"):
        prompt_rows("p", [1, 504, 3458], {}, k=5)


def test_output_rows_refuse_keys_that_are_not_token_ids() -> None:
    plain = {"logprobs": {**GENERATED["logprobs"], "tokens": [" France", " is"]}}
    with pytest.raises(ByogError, match="not token_id:N"):
        output_rows("p", 4, plain, k=5)
