"""Conformance formulas (byog/analysis/conformance_stats.py) and the checks' pure helpers, by hand."""

from __future__ import annotations

import pytest

from byog.analysis import conformance_stats as cf
from byog.correctness.conformance import schema_problem, stop_candidate


def test_chi_square_categories_merge_small_expected_counts_into_other() -> None:
    # N = 100: token 3 (p .02 -> 2 expected) joins "other" (p .08 + .02 = .10 ... computed as 1 - kept)
    probs = {1: 0.6, 2: 0.3, 3: 0.02}
    counts = {1: 58, 2: 31, 3: 4, 9: 7}
    expected, observed = cf.chi_square_categories(probs, counts)
    assert expected == pytest.approx([0.3, 0.6, 0.1])
    assert observed == [31, 58, 11]


def test_chi_square_folds_a_tiny_other_into_the_least_likely_category() -> None:
    probs = {1: 0.7, 2: 0.299}
    expected, observed = cf.chi_square_categories(probs, {1: 69, 2: 31})
    assert expected == pytest.approx([0.3, 0.7])
    assert observed == [31, 69]


def test_chi_square_by_hand() -> None:
    # X² = (58-60)²/60 + (31-30)²/30 + (11-10)²/10 = 0.0667 + 0.0333 + 0.1 = 0.2; dof 2; p = exp(-0.1)
    result = cf.chi_square({1: 0.6, 2: 0.3, 3: 0.02}, {1: 58, 2: 31, 3: 4, 9: 7})
    assert result["chi2"] == pytest.approx(0.2)
    assert result["dof"] == 2
    assert result["p_value"] == pytest.approx(0.904837, abs=1e-6)
    assert result["passed"]


def test_chi_square_fails_a_sampler_that_ignores_the_distribution() -> None:
    # greedy-like sampling (always the top token) against p = (.5, .3, .2)
    assert not cf.chi_square({1: 0.5, 2: 0.3, 3: 0.2}, {1: 400})["passed"]


def test_candidate_is_held_to_what_the_baseline_passes() -> None:
    base = [{"check": "a", "passed": True}, {"check": "b", "passed": False}, {"check": "c", "passed": True}]
    cand = [
        {"check": "a", "passed": False, "reason": "broke"},
        {"check": "b", "passed": False, "reason": "also"},
        {"check": "c", "passed": True, "reason": "ok"},
    ]
    rows = cf.hold_to_baseline(base, cand)
    assert [r["outcome"] for r in rows] == ["fail", "not held", "pass"]
    assert not cf.conforms(rows)
    assert cf.conforms(rows[1:])


def test_stop_candidate_and_schema_rule() -> None:
    assert stop_candidate(" the history of printing began") == "history"
    assert stop_candidate("12 34") is None
    assert schema_problem({"name": "Ann", "age": 31}) is None
    assert schema_problem({"name": "Ann", "age": "31"}) == "'age' is missing or not an integer"
    assert schema_problem({"name": "Ann", "age": True}) == "'age' is missing or not an integer"
    assert schema_problem([1]) == "a list, not an object"
