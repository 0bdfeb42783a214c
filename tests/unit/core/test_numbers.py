"""Plain decimals: what Mermaid 11's xychart parses and a reader reads without decoding."""

from __future__ import annotations

import re

from byog.core.numbers import decimal


def test_large_and_small_numbers_are_plain_decimals() -> None:
    assert decimal(13302.4) == "13302" and decimal(-13302.0) == "-13302"
    assert decimal(0.0080889) == "0.008089" and decimal(0.0000123) == "0.0000123"
    assert decimal(715.55) == "715.5" and decimal(0.0) == "0"
    for value in (1e20, 1.5e-9, 123456789.0, 9.99e-5):
        assert re.fullmatch(r"-?\d+(\.\d+)?", decimal(value)), decimal(value)


def test_the_digits_are_significant_as_in_g() -> None:
    assert decimal(2.99596, 4) == "2.996" and decimal(2.99596, 3) == "3"


def test_duration_picks_seconds_minutes_or_hours() -> None:
    from byog.core.numbers import duration

    assert [duration(s) for s in (95.25, 2520, 39240)] == ["95.2 s", "42.0 min", "10.9 h"]
