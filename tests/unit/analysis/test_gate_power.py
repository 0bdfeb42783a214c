"""Planned power (byog.analysis.gate_power) held against a simulation of the gate itself.

Each case predicts the false-fail rate (identical servers not declared equivalent) and the power
(a server one margin worse flagged) from the variance model, then simulates the same model
through ``paired_comparison`` (seeded, a few hundred trials) and requires the two to agree within
3 points plus 2.6 binomial standard errors of the simulation. The soundness check
(simulated false-fail <= 5%) holds at the registry's recommended n x K and fails for the
control cases (too few passes or items): the simulation can fail.
"""

from __future__ import annotations

import math
from typing import Literal

import pytest

from byog.analysis.gate_power import SOUND_FALSE_FAIL, ItemModel, observed_design, planned_power, simulate_rates
from byog.plans.tasks import TASKS

TRIALS = 300


def _agree(predicted: float, simulated: float, trials: int) -> bool:
    p = min(max(simulated, 0.02), 0.98)
    return abs(predicted - simulated) <= 0.03 + 2.6 * math.sqrt(p * (1 - p) / trials)


def _case(task: str, n: int, passes: int, margin: float | None = None) -> tuple[float, float, float, float]:
    spec = TASKS[task]
    model = ItemModel(*spec.sim_profile)
    m = spec.default_margin if margin is None else margin
    predicted = planned_power(model, n, passes, spec.sampled, m)
    simulated = simulate_rates(model, n, passes, spec.sampled, m, TRIALS, seed=11)
    print(
        f"\n{task} n={n} K={passes} margin={m}: false-fail predicted {predicted.false_fail:.3f} simulated "
        f"{simulated.false_fail:.3f}; power predicted {predicted.power:.3f} simulated {simulated.power:.3f} "
        f"({predicted.method}, {TRIALS} trials)"
    )
    return predicted.false_fail, simulated.false_fail, predicted.power, simulated.power


@pytest.mark.parametrize("task", ["gsm8k", "aime25", "gpqa_diamond", "mrcr"])
def test_sound_at_the_recommended_design(task: str) -> None:
    spec = TASKS[task]
    ff_pred, ff_sim, pw_pred, pw_sim = _case(task, spec.recommended_items, spec.recommended_passes)
    assert _agree(ff_pred, ff_sim, TRIALS) and _agree(pw_pred, pw_sim, TRIALS)
    assert ff_sim <= SOUND_FALSE_FAIL + 2.6 * math.sqrt(0.05 * 0.95 / TRIALS)
    assert ff_pred <= SOUND_FALSE_FAIL


@pytest.mark.parametrize(
    "task, n, passes",
    [
        ("aime25", 30, 4),  # the old standard tier: issue 16 measured 57%
        ("gsm8k", 100, 1),  # greedy, 100 items at a 3-point margin
        ("gsm8k", 20, 1),  # the smoke profile's eval
    ],
)
def test_control_cases_fail_the_soundness_check(task: str, n: int, passes: int) -> None:
    ff_pred, ff_sim, pw_pred, pw_sim = _case(task, n, passes)
    assert _agree(ff_pred, ff_sim, TRIALS) and _agree(pw_pred, pw_sim, TRIALS)
    assert ff_sim > SOUND_FALSE_FAIL + 0.1 and ff_pred > SOUND_FALSE_FAIL + 0.1


def test_prediction_is_fast_and_deterministic() -> None:
    model = ItemModel(*TASKS["gsm8k"].sim_profile)
    a = planned_power(model, 1319, 1, False, 3.0)
    assert a == planned_power(model, 1319, 1, False, 3.0)
    assert a.method == "exact" and planned_power(ItemModel(0.4, 1.0), 30, 16, True, 10.0).method == "normal"


def test_the_observed_design_is_the_planned_one_at_the_rate_its_discordance_implies() -> None:
    planned = ItemModel(0.75, 1.0)  # GSM8K's prior, re-draw 10%
    # 2 E[p (1 - p)] = 0.1875 at mu 0.75, k 1: 25 of 440 discordant imply (26 / 442) / 0.1875 = 31% re-draw
    observed = observed_design(planned, 440, 3.0, 25, 0.75)
    assert observed.redraw == pytest.approx(26 / 442 / 0.1875, rel=1e-4)  # E[p (1 - p)] on the Beta grid
    again = planned_power(ItemModel(0.75, 1.0, observed.redraw), 440, 1, False, 3.0)
    assert observed.false_fail == pytest.approx(again.false_fail) and observed.power == pytest.approx(again.power)
    assert not observed.sound and observed.label() == "screening (observed re-draw 31% > planned 10%)"
    assert observed.sound_n is not None
    assert planned_power(ItemModel(0.75, 1.0, observed.redraw), observed.sound_n, 1, False, 3.0).sound
    assert not planned_power(ItemModel(0.75, 1.0, observed.redraw), observed.sound_n - 10, 1, False, 3.0).sound
    calm = observed_design(planned, 440, 3.0, 0, 0.75)
    assert calm.sound and calm.label() is None and calm.redraw < planned.redraw


def _exact_on_every_pair(
    step: float, p_down: float, p_up: float, n: int, margin: float, resolution: float, method: str
) -> float:
    """``prob_equivalent_exact``'s sum written out on every (a, b) pair of counts, each term evaluated there."""
    import numpy as np
    from scipy.special import gammaln, xlogy

    from byog.analysis.gate_power import ALPHA, _count_range, _t95
    from byog.analysis.stats import score_stops, z_quantile

    a, b = _count_range(n, p_up)[:, None], _count_range(n, p_down)[None, :]
    aa, bb = np.broadcast_arrays(a, b)
    ok = a + b <= n
    aa, bb = aa[ok].astype(float), bb[ok].astype(float)
    zz = n - aa - bb
    p_zero = max(0.0, 1.0 - p_down - p_up)
    with np.errstate(divide="ignore"):
        logs = (
            gammaln(n + 1)
            - gammaln(aa + 1)
            - gammaln(bb + 1)
            - gammaln(zz + 1)
            + xlogy(aa, p_up)
            + xlogy(bb, p_down)
            + xlogy(zz, p_zero)
        )
    if method == "tango-score":
        eq = score_stops(aa, bb, n, margin, z_quantile(1 - ALPHA), z_quantile(1 - ALPHA / 2))[0]
        return float(np.clip(np.exp(logs)[eq].sum(), 0.0, 1.0))
    d = step * (aa - bb) / n
    se = np.sqrt(np.clip((step * step * (aa + bb) - n * d * d) / (n - 1), 0, None) / n)
    se = np.where((aa + bb == 0) | (aa == n) | (bb == n), resolution / n, se)
    eq = (np.abs(d) + _t95(n) * se) < margin
    return float(np.clip(np.exp(logs)[eq].sum(), 0.0, 1.0))


@pytest.mark.parametrize("method", ["paired-t", "tango-score"])
@pytest.mark.parametrize(
    "p_down,p_up,n,margin",
    [(0.0, 0.0, 20, 3.0), (0.5, 0.5, 20, 3.0), (0.0, 1.0, 30, 3.0), (0.03, 0.01, 673, 3.0), (0.06, 0.07, 20000, 1.0)],
)
def test_the_exact_sum_is_the_same_number_as_on_every_pair(
    p_down: float, p_up: float, n: int, margin: float, method: Literal["paired-t", "tango-score"]
) -> None:
    """Each term is evaluated once per count and gathered: the same values, added in the same order."""
    from byog.analysis.gate_power import prob_equivalent_exact

    expected = _exact_on_every_pair(100.0, p_down, p_up, n, margin, 100.0, method)
    assert prob_equivalent_exact(100.0, p_down, p_up, n, margin, 100.0, method) == expected
