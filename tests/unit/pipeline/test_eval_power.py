"""``--from-run``: the planned-power model fitted to an earlier run's per-item data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from byog.analysis.gate_power import ItemModel, fit_beta_binomial, model_from_items
from byog.pipeline.eval_power import eval_power_rows, eval_prior, smoke_run_of
from byog.plans.load import load_plan, parse_plan
from byog.plans.tiers import apply_tier, tiered_plan_yaml
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml


def test_beta_binomial_fit_recovers_the_prior() -> None:
    rng = np.random.default_rng(3)
    p = rng.beta(0.4 * 2.0, 0.6 * 2.0, size=4000)
    mu, k = fit_beta_binomial(rng.binomial(16, p), 16)
    assert mu == pytest.approx(0.4, abs=0.02) and k == pytest.approx(2.0, rel=0.15)
    assert fit_beta_binomial([0, 1, 1, 0], 1)[1] is None  # one pass: the concentration is not identified


def test_greedy_redraw_rate_comes_from_the_pairs_disagreements() -> None:
    prior = ItemModel(0.75, 1.0)
    base = {f"q{i}": [float(i % 4 != 0)] for i in range(400)}
    same = dict(base)
    agree = model_from_items(base, same, sampled=False, prior=prior, source="run x")
    differ = {k: [1.0 - v[0]] if i < 40 else v for i, (k, v) in enumerate(base.items())}  # 40 of 400 differ
    disagree = model_from_items(base, differ, sampled=False, prior=prior, source="run x")
    assert agree.accuracy == pytest.approx(0.75) and agree.redraw < 0.05  # (0 + 1) / 402 of items, at most
    assert disagree.redraw > 0.5  # 10% of items differ: far more than the prior's 10% re-draw makes
    floor = {k: [0.0] for k in base}  # both servers solve nothing: the rate is not measured
    assert model_from_items(floor, dict(floor), sampled=False, prior=prior, source="run x").redraw == prior.redraw
    one_off = {k: [1.0] if i == 0 else [0.0] for i, k in enumerate(base)}  # one disagreement at the floor
    assert model_from_items(floor, one_off, sampled=False, prior=prior, source="run x").redraw > prior.redraw


def test_plan_view_uses_the_earlier_run(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run")  # GSM8K, two servers answering independently at 40%
    plan, _ = load_plan("kimi-k3-gb300")
    prior = {(r["tier"], r["task"]): r for r in eval_power_rows(plan)}
    fitted = {(r["tier"], r["task"]): r for r in eval_power_rows(plan, run.root)}
    gsm8k = fitted[("full", "gsm8k")]
    assert gsm8k["model"]["source"].startswith("run ") and gsm8k["model"]["accuracy"] < 0.6
    assert gsm8k["false_fail"] > prior[("full", "gsm8k")]["false_fail"]
    assert fitted[("full", "aime25")]["model"]["source"] == "prior"  # the run scored no AIME25


def test_plan_view_defaults_to_the_smoke_tier_run_of_the_same_plan(tmp_path: Path) -> None:
    plan = parse_plan(plan_yaml(SyntheticSpec()), "synthetic plan")
    runs = tmp_path / "runs"
    assert smoke_run_of(plan, runs) is None
    chosen, why = eval_prior(plan, None, runs)
    assert chosen is None and "registry's prior" in why and str(runs) in why
    make_run_dir(runs / "full-run")  # the full tier of the same plan: not the smoke run
    assert smoke_run_of(plan, runs) is None
    smoke = make_run_dir(runs / "smoke-run", plan_text=tiered_plan_yaml(apply_tier(plan, "smoke")))
    assert smoke_run_of(plan, runs) == smoke.root
    chosen, why = eval_prior(plan, None, runs)
    assert chosen == smoke.root and "smoke-tier run" in why
    explicit, why = eval_prior(plan, runs / "full-run", runs)
    assert explicit == runs / "full-run" and "--from-run" in why
    other, _ = load_plan("kimi-k3-gb300")  # another plan's smoke run is never used
    assert smoke_run_of(other, runs) is None
