"""A server's greedy fingerprint (byog.bench.fingerprint) against byog's loopback vLLM double."""

from __future__ import annotations

import pytest

from byog.bench.fingerprint import fingerprint_prompts, take_fingerprint
from byog.core.errors import ByogError
from tests.support.fake_vllm import FakeVllm


def test_prompts_are_fixed_and_take_the_plans_input_length() -> None:
    assert fingerprint_prompts(3) == fingerprint_prompts(3)
    assert len(set(fingerprint_prompts(32))) == 32
    assert {len(p.split()) for p in fingerprint_prompts(8, words=40)} == {40}


def test_a_fingerprint_holds_greedy_tokens_and_their_logprobs_after_a_cache_reset() -> None:
    fake = FakeVllm(sleep_mode=True)
    try:
        one = take_fingerprint(fake.base_url, "fake", fingerprint_prompts(6), batch=1, max_tokens=5)
        batched = take_fingerprint(fake.base_url, "fake", fingerprint_prompts(6), batch=4, max_tokens=5)
    finally:
        fake.close()
    assert one["cache_reset"] is True and (one["batch"], batched["batch"]) == (1, 4)
    assert [len(t) for t in one["tokens"]] == [5] * 6 and one["tokens"] == batched["tokens"]
    assert all(lp <= 0 for row in one["logprobs"] for lp in row)
    sent = [r for r in fake.requests if "prompt" in r]
    assert all(r["temperature"] == 0.0 and r["ignore_eos"] and r["return_tokens_as_token_ids"] for r in sent)


def test_a_server_without_dev_mode_cannot_reset_its_cache_and_says_so_in_the_record() -> None:
    fake = FakeVllm()
    try:
        assert take_fingerprint(fake.base_url, "fake", fingerprint_prompts(1), max_tokens=2)["cache_reset"] is False
    finally:
        fake.close()


def test_an_answer_without_token_ids_is_an_error() -> None:
    from byog.bench import fingerprint

    with pytest.raises(ByogError, match="not token_id:N"):
        fingerprint._token_id("hello")
