"""One format and one comparison rule for a recorded commit."""

from __future__ import annotations

import pytest

from byog.schemas.commits import is_commit, same_commit

FULL = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    "text", ["main", "HEAD; $(touch x)", FULL + " and more", FULL.upper(), "abc123", FULL + "0", ""]
)
def test_what_is_not_a_commit(text: str) -> None:
    assert not is_commit(text)


def test_an_abbreviation_matches_its_full_commit_and_two_full_ones_only_when_equal() -> None:
    assert same_commit(FULL[:9], FULL) and same_commit(FULL, FULL[:7]) and same_commit(FULL, FULL)
    assert not same_commit(FULL, "f" + FULL[1:])
    assert not same_commit(FULL[:6], FULL)  # too short to name one
    assert not same_commit(FULL + " (rebased)", FULL) and not same_commit(None, FULL)
