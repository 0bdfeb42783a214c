"""The two kinds of record: a raw one refuses unknown keys; a derived one stores no NaN or infinity and
leaves out what its class marks as omitted while empty."""

from __future__ import annotations

import math
from typing import ClassVar

import pytest
from pydantic import ValidationError

from byog.schemas.base import Derived, Strict, finite_or_none


class Raw(Strict):
    tok_s: float


class Point(Derived):
    omit_when_empty: ClassVar[frozenset[str]] = frozenset({"margins", "note"})
    tok_s: float | None = None
    samples: list[float | None] = []
    margins: list[float] = []
    note: str | None = None


def test_a_misspelt_key_is_an_error_that_names_it() -> None:
    with pytest.raises(ValidationError, match="tok_per_s"):
        Raw.model_validate({"tok_s": 1.0, "tok_per_s": 2.0})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_become_none(bad: float) -> None:
    assert finite_or_none(bad) is None
    assert finite_or_none([1.0, bad]) == [1.0, None]
    point = Point(tok_s=bad, samples=[2.0, bad])
    assert point.tok_s is None and point.samples == [2.0, None]


def test_also_on_assignment() -> None:
    point = Point(tok_s=1.0)
    point.tok_s = math.nan
    assert point.tok_s is None


def test_other_values_pass_unchanged() -> None:
    assert finite_or_none(1.5) == 1.5
    assert finite_or_none("nan") == "nan"  # a string is not a float
    assert finite_or_none(None) is None


def test_empty_omitted_fields_are_left_out_of_the_dump() -> None:
    assert Point(tok_s=1.0).model_dump() == {"tok_s": 1.0, "samples": []}  # samples is not omitted while empty
    full = Point(tok_s=1.0, margins=[0.1], note="A/A").model_dump()
    assert full["margins"] == [0.1] and full["note"] == "A/A"


def test_a_derived_record_refuses_unknown_keys_too() -> None:
    with pytest.raises(ValidationError):
        Point.model_validate({"tok_s": 1.0, "extra": 1})
