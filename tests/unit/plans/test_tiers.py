"""Tier rules keep the accuracy gate sound where they can (docs/statistics.md §3-4)."""

from __future__ import annotations

import pytest

from byog.analysis.eval_summary import margin_for
from byog.analysis.gate_power import ItemModel, cheapest_sound, planned_for_spec
from byog.pipeline.eval_power import eval_power_rows
from byog.plans.load import load_plan
from byog.plans.tasks import TASKS
from byog.plans.tiers import apply_tier, tiered_plan_yaml

STANDARD_TARGET = 0.01  # the standard tier's cut: predicted false-fail <= 1% (headroom for the model)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_registry_standard_design_is_the_cheapest_sound_one(name: str) -> None:
    task = TASKS[name]
    found = cheapest_sound(
        ItemModel(*task.sim_profile),
        task.recommended_items,
        task.recommended_passes,
        task.sampled,
        task.default_margin,
        STANDARD_TARGET,
        step=10,
    )
    want = found or (task.recommended_items, task.recommended_passes)  # none at 1%: the full design stays
    assert (task.standard_items or task.recommended_items, task.standard_passes or task.recommended_passes) == want


@pytest.mark.parametrize("profile", ["kimi-k3-gb300", "deepseek-v4.1-flash"])
def test_gpu_profiles_are_sound_at_full_and_standard_and_screening_at_smoke(profile: str) -> None:
    plan, _ = load_plan(profile)
    for tier in ("full", "standard"):
        cut = apply_tier(plan, tier)
        for spec in cut.evals:
            planned = planned_for_spec(spec, margin_for(cut, spec.task))
            assert planned is not None and planned.sound, (tier, spec.task, planned)
    rows = eval_power_rows(plan)
    assert {r["sound"] for r in rows if r["tier"] == "smoke"} == {False}


def test_old_standard_caps_were_unsound() -> None:
    """The cap this replaces (100 items x 4 passes) failed identical servers on every sampled task."""
    plan, _ = load_plan("kimi-k3-gb300")
    for spec in plan.evals:
        if TASKS[spec.task].sampled:
            old = spec.model_copy(update={"limit": 100, "passes": min(spec.passes, 4)})
            assert planned_for_spec(old, margin_for(plan, spec.task)).false_fail > 0.5


def test_smoke_profile_says_gsm8k_is_screening_and_its_arithmetic_is_sound_at_full_size() -> None:
    plan, _ = load_plan(None)
    assert plan.launches == 1 and not plan.aa_pair
    sound = {(r["tier"], r["task"]): r["sound"] for r in eval_power_rows(plan)}
    assert {v for (_, task), v in sound.items() if task == "gsm8k"} == {False}
    assert sound[("smoke", "arithmetic_generated")] is False  # the smoke tier's 10 items
    assert sound[("full", "arithmetic_generated")] is True  # what `byog run` runs: 200 items, margin 10


def test_launch_fields_leave_tiered_yaml_unchanged_at_their_defaults() -> None:
    plan, _ = load_plan("kimi-k3-gb300")
    assert "launches" not in tiered_plan_yaml(apply_tier(plan, "smoke"))
    repeated = plan.model_copy(update={"launches": 3, "aa_pair": True})
    text = tiered_plan_yaml(apply_tier(repeated, "standard"))
    assert "launches: 3" in text and "aa_pair: true" in text
    assert apply_tier(repeated, "smoke").launches == 1  # smoke keeps one launch per server
    assert plan.launches == 2  # a profile that claims launches every server twice (docs/statistics.md §6)
    single = plan.model_copy(update={"launches": 1, "aa_pair": True})
    assert repeated.launches_of("baseline-tp8") == 3 and single.launches_of("baseline-tp8") == 2
    assert single.launches_of("candidate-tp8") == 1
