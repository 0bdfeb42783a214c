"""Group-sequential boundaries against published values, computed here by scipy (no tables)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from byog.analysis import group_sequential as gs
from byog.analysis import stats

FIVE = [k / 5 for k in range(1, 6)]


def test_classic_pocock_and_obrien_fleming_constants_for_five_looks() -> None:
    # Jennison & Turnbull (2000), Tables 2.1 and 2.3: K = 5, two-sided alpha 0.05
    assert gs.classic_constant(FIVE, 0.05, "pocock") == pytest.approx(2.413, abs=5e-4)
    assert gs.classic_constant(FIVE, 0.05, "obf") == pytest.approx(2.040, abs=5e-4)


def test_lan_demets_spending_boundaries_for_five_looks() -> None:
    # Reboussin, DeMets, Kim and Lan (2000), the Lan-DeMets programs: K = 5 equally spaced, two-sided 0.05
    obf = gs.spending_bounds(FIVE, 0.05, "obf", 2)
    assert obf == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=1e-3)
    pocock = gs.spending_bounds(FIVE, 0.05, "pocock", 2)
    assert pocock == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=1e-3)


def test_boundaries_hold_alpha_under_the_joint_normal_law() -> None:
    # the integration against scipy's multivariate normal: corr(Z_i, Z_j) = sqrt(t_i / t_j)
    fractions = [0.5, 0.75, 1.0]
    for spending in ("obf", "pocock"):
        bounds = gs.spending_bounds(fractions, 0.05, spending, 2)
        cov = np.array([[math.sqrt(min(a, b) / max(a, b)) for b in fractions] for a in fractions])
        inside = multivariate_normal(mean=np.zeros(3), cov=cov, abseps=1e-7, releps=1e-7).cdf(
            np.array(bounds), lower_limit=-np.array(bounds)
        )
        assert 1 - inside == pytest.approx(0.05, abs=2e-4)
        one_sided = gs.spending_bounds(fractions, 0.05, spending, 1)
        below = multivariate_normal(mean=np.zeros(3), cov=cov, abseps=1e-7, releps=1e-7).cdf(np.array(one_sided))
        assert 1 - below == pytest.approx(0.05, abs=2e-4)


def test_one_look_is_the_fixed_gate() -> None:
    rng = np.random.default_rng(3)
    diffs = [float(x) for x in rng.choice([-100.0, 0.0, 100.0], size=400, p=[0.04, 0.92, 0.04])]
    looks = gs.sequential_gate(diffs, 3.0, gs.SequentialDesign(fractions=(1.0,)))
    fixed = stats.paired_comparison([d for d in diffs], [0.0] * len(diffs), 3.0)
    assert len(looks) == 1
    assert looks[0].equivalence_bound == pytest.approx(stats.t_quantile(0.95, 399))
    assert looks[0].difference_bound == pytest.approx(stats.t_quantile(0.975, 399))
    assert looks[0].decision == fixed.verdict


def test_binary_items_take_the_score_statistic_at_every_look_and_one_look_is_the_fixed_gate() -> None:
    from scipy.special import ndtri

    rng = np.random.default_rng(5)
    base = rng.choice([0.0, 100.0], size=600)
    flip = rng.random(600) < 0.05  # ~30 discordant items
    cand = np.where(flip, 100.0 - base, base)
    cand_l, base_l = [float(x) for x in cand], [float(x) for x in base]
    diffs = [c - b for c, b in zip(cand_l, base_l, strict=True)]
    method = stats.method_for(cand_l, base_l, 100.0)
    assert method == "tango-score"
    fixed = stats.paired_comparison(cand_l, base_l, 3.0)
    (look,) = gs.sequential_gate(diffs, 3.0, gs.SequentialDesign(fractions=(1.0,)), method=method)
    assert look.equivalence_bound == pytest.approx(float(ndtri(0.95)))  # z, not t: Tango's statistic is a z
    assert look.difference_bound == pytest.approx(float(ndtri(0.975)))
    assert look.decision == fixed.verdict
    plus, minus = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    assert look.z_zero == pytest.approx((plus - minus) / np.sqrt(plus + minus))  # McNemar's z
    assert look.z_lower == pytest.approx(float(stats.tango_z(plus, minus, 600, -0.03)))
    record = gs.sequential_record(diffs, 3.0, gs.SequentialDesign(fractions=(0.5, 0.75, 1.0)), method=method)
    assert record.method == "tango-score"
    assert all(lk.equivalence_bound > float(ndtri(0.95)) for lk in record.looks[:-1])  # OBF: stricter early


def test_a_small_discordance_pair_the_paired_t_passed_is_not_equivalent_at_any_look() -> None:
    # 610 items, 15 only the candidate solved, 4 only the baseline, spread over the item order:
    # the paired t said equivalent at the last look; Tango's statistic does not (test_stats has the figures)
    diffs = [0.0] * 610
    for i in range(15):
        diffs[i * 40] = 100.0
    for i in range(4):
        diffs[i * 150 + 20] = -100.0
    design = gs.SequentialDesign(fractions=(0.5, 0.75, 1.0))
    assert gs.sequential_gate(diffs, 3.0, design, method="paired-t")[-1].decision == "equivalent"
    looks = gs.sequential_gate(diffs, 3.0, design, method="tango-score")
    assert [lk.decision for lk in looks] == ["continue", "continue", "inconclusive"]


def test_look_sizes_are_fixed_by_the_plan() -> None:
    assert gs.look_sizes(440, (0.5, 0.75, 1.0)) == [220, 330, 440]
    assert gs.look_sizes(3, (0.5, 0.75, 1.0)) == [2, 3]
    with pytest.raises(ValueError, match="end at 1"):
        gs.look_sizes(100, (0.5, 0.9))


def test_identical_servers_stop_early_for_equivalence_and_a_shift_for_difference() -> None:
    design = gs.SequentialDesign(fractions=(0.5, 0.75, 1.0))
    quiet = [100.0 if i % 50 == 0 else -100.0 if i % 50 == 25 else 0.0 for i in range(1000)]
    looks = gs.sequential_gate(quiet, 3.0, design)
    assert [lk.items for lk in looks] == [500]
    assert looks[-1].decision == "equivalent"
    shifted = [-100.0 if i % 5 == 0 else 0.0 for i in range(1000)]  # 20 points worse
    assert gs.sequential_gate(shifted, 3.0, design)[-1].decision == "different"
    noisy = [100.0 if i % 2 else -100.0 for i in range(200)]  # SE far wider than the margin
    looks = gs.sequential_gate(noisy, 3.0, design)
    assert [lk.decision for lk in looks] == ["continue", "continue", "inconclusive"]


def test_looks_are_fractions_of_the_planned_items_and_records_may_end_only_where_the_gate_stopped() -> None:
    design = gs.SequentialDesign(fractions=(0.5, 0.75, 1.0))
    quiet = [100.0 if i % 50 == 0 else -100.0 if i % 50 == 25 else 0.0 for i in range(1000)]
    stopped = gs.sequential_record(quiet[:500], 3.0, design, planned=1000)  # the run stopped at look 1
    assert (stopped.decision, stopped.items_used, stopped.items_planned) == ("equivalent", 500, 1000)
    assert not gs.missing_items(stopped)
    past = gs.sequential_record(quiet[:800], 3.0, design, planned=1000)  # items run past the stop
    assert past == stopped  # the decision is the first crossing
    noisy = [100.0 if i % 2 else -100.0 for i in range(200)]
    short = gs.sequential_record(noisy[:120], 3.0, design, planned=200)  # look 2 (150) never taken
    assert [lk.decision for lk in short.looks] == ["continue"]
    assert short.decision == "inconclusive" and gs.missing_items(short)
    assert gs.missing_items(gs.sequential_record(noisy[:50], 3.0, design, planned=200))  # not even look 1


def test_a_one_look_design_runs_every_item() -> None:
    fixed = gs.SequentialDesign(fractions=(1.0,))
    assert gs.stop_probabilities(1319, fixed, 3.0, 0.0, 15.0) == [(1319, 1.0)]
    assert gs.expected_items(1319, fixed, 3.0, 0.0, 15.0) == 1319


@pytest.mark.parametrize("spending", ["obf", "pocock"])
def test_expected_items_match_the_monte_carlo_of_the_gate_itself(spending: gs.Spending) -> None:
    from byog.analysis import sequential_sim

    q, margin, looks = 0.2, 3.0, (0.5, 0.75, 1.0)
    n = sequential_sim.design_n(q, margin)
    design = gs.SequentialDesign(fractions=looks, spending=spending)
    probs = gs.stop_probabilities(n, design, margin, 0.0, 100.0 * math.sqrt(q))
    assert [size for size, _ in probs] == gs.look_sizes(n, looks)
    assert sum(p for _, p in probs) == pytest.approx(1.0, abs=1e-9)
    equal = gs.expected_items(n, design, margin, 0.0, 100.0 * math.sqrt(q)) / n
    # one margin apart: d_i = +-100 with P (q +- delta/100) / 2, so sd = sqrt(1e4 q - delta^2)
    apart = gs.expected_items(n, design, margin, margin, math.sqrt(1e4 * q - margin**2)) / n
    cell = sequential_sim.simulate(q, margin, looks, trials=4000, seed=11, spending=spending)
    assert equal == pytest.approx(1.0 - cell.items_saved_equal, abs=0.015)  # MC SE of the mean ~0.003
    assert apart == pytest.approx(1.0 - cell.items_saved_margin, abs=0.015)
    assert equal < 0.9 and apart < 0.9  # the design saves items under both hypotheses
