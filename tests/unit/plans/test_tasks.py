"""The one rule for whether an eval fits a server's context: the task's prompt reserve + the answer
length its requests ask for must fit max_model_len, or the eval is refused in one sentence."""

from __future__ import annotations

import pytest

from byog.core.errors import UsageError
from byog.plans.tasks import (
    EvalContextUnknown,
    EvalDoesNotFit,
    answer_tokens,
    check_eval_fits,
    check_eval_runs,
    get_task,
)

GSM8K = get_task("gsm8k")  # 1,024 tokens reserved for the 5-shot prompts, answers in up to 256


def test_a_context_that_holds_the_prompts_but_not_the_whole_answer_is_refused() -> None:
    """At 1,100 tokens the answers would have had 76 tokens, not the task's 256: refused, not cut."""
    with pytest.raises(EvalDoesNotFit) as caught:
        check_eval_fits(GSM8K, "base", 1100)
    assert str(caught.value) == (
        "eval 'gsm8k' reserves 1024 tokens for its prompts and answers in up to 256, but server 'base' holds at "
        "most max_model_len = 1100: raise it to at least 1280, or lower its max_gen_toks to 76"
    )
    assert caught.value.exit_code == 2
    check_eval_fits(GSM8K, "base", 1280)


def test_no_room_for_any_answer_offers_no_lower_answer_length() -> None:
    with pytest.raises(EvalDoesNotFit, match=r"max_model_len = 1024: raise it to at least 1280$"):
        check_eval_fits(GSM8K, "base", 1024)


def test_the_rule_holds_for_the_answer_length_the_requests_ask_for() -> None:
    """A plan's or CLI's max_gen_toks over the task's; lm-eval sends max_tokens where both are set."""
    check_eval_fits(GSM8K, "base", 1124, {"max_gen_toks": 100})
    with pytest.raises(EvalDoesNotFit, match="answers in up to 4000, .* raise it to at least 5024, or lower its"):
        check_eval_fits(GSM8K, "base", 4096, {"max_gen_toks": 4000})
    assert answer_tokens(GSM8K, {"max_gen_toks": 100, "max_tokens": 300}) == 300
    with pytest.raises(EvalDoesNotFit, match="or lower its max_tokens to 76"):
        check_eval_fits(GSM8K, "base", 1100, {"max_gen_toks": 16, "max_tokens": 300})


def test_mrcr_sizes_its_items_itself_and_is_exempt() -> None:
    check_eval_fits(get_task("mrcr"), "base", 512)
    check_eval_fits(get_task("mrcr_generated"), "base", 512, {"max_gen_toks": 100000})


def test_an_eval_on_a_server_that_does_not_say_its_context_is_refused_not_guessed() -> None:
    """What the server does not say byog cannot check: an lm-eval task's answers might be cut, and MRCR
    sizes its items to the context. Both refused, in one sentence naming what was needed and where."""
    with pytest.raises(EvalContextUnknown) as caught:
        check_eval_runs(GSM8K, "base", None, {"max_gen_toks": 100})
    assert str(caught.value) == (
        "eval 'gsm8k' needs 1124 tokens of context (1024 reserved for its prompts + answers in up to 100), but "
        "server 'base' does not say its context (its /v1/models card has no max_model_len): byog runs evals only "
        "on a server that states it, as vLLM does"
    )
    assert caught.value.exit_code == 2
    with pytest.raises(EvalContextUnknown, match="^eval 'mrcr' sizes its items to the server's context, but server"):
        check_eval_runs(get_task("mrcr"), "base", None)
    assert check_eval_runs(GSM8K, "base", 1280) == 1280  # a context the server says: the fit rule decides
    assert check_eval_runs(get_task("mrcr"), "base", 512) == 512
    with pytest.raises(EvalDoesNotFit):
        check_eval_runs(GSM8K, "base", 1100)


@pytest.mark.parametrize("value", ["many", 0, -5, True, 1.5])
def test_an_answer_length_that_is_not_a_count_of_tokens_is_refused(value: object) -> None:
    with pytest.raises(UsageError, match="eval 'gsm8k' sets max_gen_toks to '.*', not a whole number above 0"):
        check_eval_fits(GSM8K, "base", 4096, {"max_gen_toks": value})
