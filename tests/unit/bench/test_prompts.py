"""Repeated-passage prompts: one real GSM8K passage repeated to exactly ISL tokens, labelled as such."""

from __future__ import annotations

from typing import Any

from byog.bench.prompts import build_prompts, dataset_passages, prompts_label
from byog.core.settings import resolve_data_dir


class CharTokenizer:
    """Stands in for the server's /tokenize: one id per character."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, text: str) -> list[int]:
        self.encoded.append(text)
        return [ord(c) for c in text]

    def __getattr__(self, name: str) -> Any:  # decode/vocab are not used for completions prompts
        raise AssertionError(f"unexpected call {name}")


def test_one_passage_repeated_to_exactly_isl_tokens() -> None:
    tok = CharTokenizer()
    prompts = build_prompts(
        kind="dataset",
        dataset="gsm8k",
        api="completions",
        isl=2000,
        count=3,
        seed=1234,
        point_id="spec-b1-isl2000-osl64",
        server=tok,
        repeat=True,
    )  # type: ignore[arg-type]
    assert len(prompts) == 3 and all(len(p.body) == 2000 and p.expected_n_in == 2000 for p in prompts)
    for prompt in prompts:
        text = "".join(chr(i) for i in prompt.body)
        passage = text.split("\n\n")[0]
        assert passage.startswith("Question: ") and "\nAnswer: " in passage and "####" in passage
        # the whole prompt is that passage over and over
        assert text == ((passage + "\n\n") * (2000 // (len(passage) + 2) + 1))[:2000]
    # the same (seed, point) gives the same prompts; another point other ones
    again = build_prompts(
        kind="dataset",
        dataset="gsm8k",
        api="completions",
        isl=2000,
        count=3,
        seed=1234,
        point_id="spec-b1-isl2000-osl64",
        server=CharTokenizer(),
        repeat=True,
    )  # type: ignore[arg-type]
    assert [p.body for p in again] == [p.body for p in prompts]
    other = build_prompts(
        kind="dataset",
        dataset="gsm8k",
        api="completions",
        isl=2000,
        count=3,
        seed=1234,
        point_id="spec-b4-isl2000-osl64",
        server=CharTokenizer(),
        repeat=True,
    )  # type: ignore[arg-type]
    assert [p.body for p in other] != [p.body for p in prompts]


def test_passages_and_labels() -> None:
    passages = dataset_passages("gsm8k", resolve_data_dir(None))
    assert len(passages) == 1319 and passages[0].startswith("Question: Janet")
    assert prompts_label("dataset", "gsm8k", repeat=True) == "dataset:gsm8k:repeated"
    assert prompts_label("dataset", "gsm8k") == "dataset:gsm8k"
    assert prompts_label("random", None) == "random-ids"
