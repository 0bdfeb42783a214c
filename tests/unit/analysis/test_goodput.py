"""Goodput under an SLO and the rate search: hand-computed cases, and a search run against a known curve."""

from __future__ import annotations

import math

import pytest

from byog.analysis.goodput import (
    RateSearchRule,
    SloLimits,
    goodput,
    meets_slo,
    next_rate,
    search_result,
)


def test_meets_slo_checks_every_stated_limit_and_only_those() -> None:
    slo = SloLimits(ttft_s=0.5, tpot_s=0.05)
    assert meets_slo(True, 0.5, 0.05, 99.0, slo)  # limits are inclusive; e2e is not part of this SLO
    assert not meets_slo(True, 0.51, 0.01, None, slo)
    assert not meets_slo(True, 0.1, 0.051, None, slo)
    assert not meets_slo(False, 0.1, 0.01, None, slo)  # a failed request never meets an SLO
    assert not meets_slo(True, None, 0.01, None, slo)  # no first token: no TTFT to meet the limit with
    assert meets_slo(True, 0.1, None, None, slo)  # one output token: no TPOT, as vLLM (TPOT counted 0)
    assert not meets_slo(True, 0.1, 0.01, 2.0, SloLimits(e2e_s=1.0))
    assert meets_slo(True, None, None, None, SloLimits())  # no limits: every successful request is good


def test_goodput_counts_good_requests_and_their_tokens_over_the_span() -> None:
    g = goodput([True, False, True, True], [10, 100, 20, 30], span_s=2.0)
    assert (g.measured, g.good) == (4, 3)
    assert g.slo_share == 0.75
    assert g.goodput_req_s == 1.5
    assert g.goodput_tok_s == 30.0  # (10 + 20 + 30) / 2: the bad request's 100 tokens do not count
    empty = goodput([], [], span_s=None)
    assert empty.slo_share is None and empty.goodput_req_s is None
    with pytest.raises(ValueError):
        goodput([True], [1, 2], 1.0)


def _run_search(share_at, rule: RateSearchRule) -> list[tuple[float, float]]:
    probes: list[tuple[float, float]] = []
    while (rate := next_rate(probes, rule)) is not None:
        probes.append((rate, share_at(rate)))
    return probes


def test_search_brackets_up_then_bisects_to_the_tolerance() -> None:
    # A server that keeps everything inside the SLO up to 5.3 req/s, nothing above.
    rule = RateSearchRule(target_share=0.9, start_rate=1.0, rel_tol=0.05, max_probes=20)
    probes = _run_search(lambda r: 1.0 if r <= 5.3 else 0.2, rule)
    rates = [r for r, _ in probes]
    assert rates[:4] == [1.0, 2.0, 4.0, 8.0]  # bracketing by x2 until the first failure
    assert rates[4] == round(math.sqrt(4 * 8), 2)  # then geometric midpoints: 5.66
    result = search_result(probes, rule)
    assert result.converged and result.failing_rate is not None and result.best_rate is not None
    assert result.best_rate <= 5.3 < result.failing_rate
    assert (result.failing_rate - result.best_rate) / result.best_rate <= 0.05
    assert "keeps 90% inside the SLO" in result.reason


def test_search_brackets_down_and_gives_up_below_the_floor() -> None:
    rule = RateSearchRule(start_rate=4.0, min_rate=0.5, max_probes=20)
    probes = _run_search(lambda r: 0.0, rule)
    assert [r for r, _ in probes] == [4.0, 2.0, 1.0, 0.5]  # 0.25 would be under min_rate
    result = search_result(probes, rule)
    assert result.best_rate is None and result.failing_rate == 0.5 and not result.converged
    assert "no measured rate" in result.reason


def test_search_stops_at_the_probe_budget_and_says_it_did_not_converge() -> None:
    rule = RateSearchRule(start_rate=1.0, rel_tol=0.001, max_probes=6)
    probes = _run_search(lambda r: 1.0 if r <= 5.3 else 0.0, rule)
    assert len(probes) == 6
    result = search_result(probes, rule)
    assert not result.converged and "NOT within" in result.reason


def test_search_with_every_probe_passing_reports_a_lower_bound() -> None:
    rule = RateSearchRule(start_rate=1.0, max_probes=3)
    probes = _run_search(lambda r: 1.0, rule)
    result = search_result(probes, rule)
    assert [r for r, _ in probes] == [1.0, 2.0, 4.0] and result.best_rate == 4.0 and result.failing_rate is None
    assert "lower bound" in result.reason and not result.converged


def test_a_pass_above_a_failure_is_ignored_and_listed() -> None:
    rule = RateSearchRule(target_share=0.9, rel_tol=0.5)
    probes = [(1.0, 1.0), (2.0, 0.5), (4.0, 0.95)]  # noise: 4 req/s passed after 2 failed
    result = search_result(probes, rule)
    assert result.best_rate == 1.0 and result.failing_rate == 2.0 and result.non_monotone == [4.0]
    assert next_rate(probes, rule) == 1.41  # bisects [1, 2], never trusts the pass at 4


def test_search_stops_at_its_resolution() -> None:
    # 3 significant figures: between 1.00 and 1.01 there is no other rate to measure
    rule = RateSearchRule(rel_tol=0.0001, max_probes=50)
    probes = [(1.0, 1.0), (1.01, 0.0)]
    assert next_rate(probes, rule) is None
    assert search_result(probes, rule).converged
