"""MRCR: the official grader, the bins, the row generator and the fixture's schema."""

from __future__ import annotations

import json
from difflib import SequenceMatcher
from pathlib import Path

import pytest

from byog.evals import mrcr, mrcr_generate, mrcr_grade, mrcr_tokens
from byog.evals.data import FIXTURES_DIR, read_rows

MRCR_COLUMNS = {
    "prompt",
    "answer",
    "random_string_to_prepend",
    "n_needles",
    "desired_msg_index",
    "total_messages",
    "n_chars",
}


def test_grade_requires_the_prefix() -> None:
    assert mrcr_grade.grade("the poem", "abc123the poem", "abc123") == 0.0
    assert mrcr_grade.grade(" abc123the poem", "abc123the poem", "abc123") == 0.0  # not at the very start


def test_grade_is_sequence_matcher_ratio_after_the_prefix() -> None:
    assert mrcr_grade.grade("abc123the poem", "abc123the poem", "abc123") == 1.0
    # "the poem" vs "the pome": ratio = 2*M/T with M = 7 matching chars of 16 -> 0.875
    assert mrcr_grade.grade("abc123the pome", "abc123the poem", "abc123") == pytest.approx(0.875)
    assert mrcr_grade.grade("abc123xyz", "abc123the poem", "abc123") == pytest.approx(
        SequenceMatcher(None, "xyz", "the poem").ratio()
    )


def test_bins_follow_the_card_from_4096() -> None:
    assert mrcr_grade.bin_label(4096) == "4096-8192"
    assert mrcr_grade.bin_label(8192) == "4096-8192"  # first bin closed on both ends
    assert mrcr_grade.bin_label(8193) == "8192-16384"
    assert mrcr_grade.bin_label(16384) == "16384-32768"  # middle bins are [lo, hi)
    assert mrcr_grade.bin_label(1048576) == "524288-1048576"  # last bin closed
    assert mrcr_grade.bin_label(2000) == "1024-2048"
    assert mrcr_grade.bin_label(3000) == "2048-4096"
    assert mrcr_grade.bin_label(100) == "0-256"


@pytest.mark.parametrize("target", [300, 1000, 5000])
def test_generated_rows_are_consistent(target: int) -> None:
    rows = mrcr_generate.generate_rows(3, target, seed=5)
    assert rows == mrcr_generate.generate_rows(3, target, seed=5)  # deterministic
    for row in rows:
        assert set(row) == MRCR_COLUMNS
        messages = json.loads(row["prompt"])
        assert row["total_messages"] == len(messages) and messages[-1]["role"] == "user"
        assert row["answer"] == row["random_string_to_prepend"] + messages[row["desired_msg_index"]]["content"]
        assert row["n_chars"] == sum(len(m["content"]) for m in messages)
        ask = messages[row["desired_msg_index"] - 1]["content"]
        needle_asks = [
            i for i, m in enumerate(messages[:-1]) if m["role"] == "user" and m["content"].endswith(ask.split("] ")[-1])
        ]
        assert len(needle_asks) == row["n_needles"] == 8
        # the final ask names the right ordinal of the needle
        k = needle_asks.index(row["desired_msg_index"] - 1) + 1
        assert f"the {mrcr_generate.ordinal(k)} (1 indexed)" in messages[-1]["content"]
        assert row["random_string_to_prepend"] in messages[-1]["content"]
        # length lands near the target (chars/4 heuristic)
        assert 0.5 * target < row["n_chars"] / 4 < 2.0 * target
        assert mrcr_grade.grade(row["answer"], row["answer"], row["random_string_to_prepend"]) == 1.0


def test_fixture_rows_have_the_exact_schema_and_are_labelled() -> None:
    rows = read_rows(FIXTURES_DIR / "mrcr.FIXTURE.jsonl")
    assert len(rows) >= 3
    for row in rows:
        assert set(row) == MRCR_COLUMNS
        assert isinstance(row["prompt"], str) and "FIXTURE" in json.loads(row["prompt"])[0]["content"]


def test_o200k_base_never_fetched_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    import tiktoken

    def boom(*args, **kwargs):  # any attempt to build the encoding (i.e. download) fails the test
        raise AssertionError("tried to load o200k_base without a cached file")

    monkeypatch.setattr(tiktoken, "get_encoding", boom)
    assert mrcr_tokens.load_o200k_base(tmp_path, offline=True) is None


def test_token_counter_falls_back_to_the_server_and_says_so(tmp_path: Path) -> None:
    class FakeResponse:
        def __init__(self, n: int) -> None:
            self.n = n

        def raise_for_status(self) -> None:
            pass

        def json(self) -> dict:
            return {"count": self.n}

    class Client:
        def post(self, url: str, json: dict) -> FakeResponse:
            assert url.endswith("/tokenize")
            return FakeResponse(len(json["prompt"].split()))

    counter = mrcr_tokens.token_counter(tmp_path, True, Client(), "http://x", "m")
    assert counter.name.startswith("server-tokenize:m") and "not o200k_base" in counter.name
    row = {"prompt": json.dumps([{"role": "user", "content": "a b c"}]), "answer": "d e"}
    assert mrcr.row_total_tokens(row, counter) == 5


def test_prepare_items_caps_rows_at_the_servers_context() -> None:
    """Rows whose prompt + answer (server tokens) exceed max_model_len are skipped and counted."""

    class Resp:
        def __init__(self, n: int) -> None:
            self.n = n

        def raise_for_status(self) -> None:
            pass

        def json(self) -> dict:
            return {"count": self.n}

    class Client:  # 1 token per 4 characters, like the generator's heuristic
        def post(self, url: str, json: dict) -> Resp:
            text = json.get("prompt") or "".join(m["content"] for m in json["messages"])
            return Resp(len(text) // 4)

    rows = (
        mrcr_generate.generate_rows(1, 500, seed=1)
        + mrcr_generate.generate_rows(1, 3000, seed=1)
        + mrcr_generate.generate_rows(1, 500, seed=2, n_needles=4)
    )
    huge = dict(rows[0], n_chars=10**7)
    counter = mrcr_tokens.TokenCounter("test", lambda text: len(text) // 4)
    items, skipped = mrcr.prepare_items(
        rows + [huge],
        ["a", "b", "c", "d"],
        counter=counter,
        client=Client(),
        base_url="http://x",
        model="m",
        max_model_len=2048,
        n_needles=8,
    )
    assert [it.item_id for it in items] == ["a"]
    assert skipped == {"needles": 1, "over_context": 2}
    assert items[0].prompt_server_tokens + items[0].answer_server_tokens <= 2048
