"""The numerics headline names the control, its distance and the entry to try, and keeps a finding."""

from __future__ import annotations

from byog.analysis.numerics_headline import numerics_headline, weakness
from byog.schemas.numerics import BaselineSensitivity, NumericsComparison


def _sens(**kw: object) -> BaselineSensitivity:
    base: dict[str, object] = {
        "baseline": "stock",
        "sensitive": False,
        "reason": "r",
        "head_ratio": 15.6,
        "mean_top1_prob": 0.48,
        "variant": "stock.variant",
        "control": "stock.control",
        "control_verdict": "numerically equivalent",
        "control_distance": 0.794,
        "control_change": "fp16",
        "try_control": "fp8-kv",
    }
    return BaselineSensitivity.model_validate(base | kw)


def _comparison(candidate: str, verdict: str, rule: str, distance: float) -> NumericsComparison:
    return NumericsComparison.model_validate(
        {
            "candidate": candidate,
            "baseline": "stock",
            "verdict": verdict,
            "rule_verdict": rule,
            "families": [],
            "max_distance": distance,
        }
    )


def test_the_issue_tables_h200_rows_read_what_they_found() -> None:
    weak = _sens()
    fp8 = numerics_headline(_comparison("fp8kv", "drifts", "drifts", 37.2), weak)
    assert fp8 == (
        "⚠️ drifts at 37.2 envelopes, a difference that stands although the baseline is insensitive: the control "
        "fp16 (stock.control) landed at 0.794 envelopes, within the envelope, so this baseline cannot show a change "
        "of that size; try numerics.control: fp8-kv"
    )
    triton = numerics_headline(_comparison("triton", "insensitive", "numerically equivalent", 1.16), weak)
    assert triton.startswith(
        "➖ insensitive (the rule alone: numerically equivalent, 1.16 envelopes): the control fp16"
    )
    assert triton.endswith(
        "0.794 envelopes, within the envelope, so this baseline cannot show a change of that size; "
        "try numerics.control: fp8-kv"
    )


def test_a_sensitive_baseline_states_its_controls_distance() -> None:
    seen = _sens(
        sensitive=True,
        control="fp8kv",
        control_change="fp8-kv",
        control_verdict="drifts",
        control_distance=37.2,
        try_control=None,
    )
    line = numerics_headline(_comparison("triton", "numerically equivalent", "numerically equivalent", 1.16), seen)
    assert line == "✅ numerically equivalent at 1.16 envelopes; the control fp8-kv (fp8kv) landed at 37.2 envelopes"


def test_flat_distributions_say_why_without_a_control_to_try() -> None:
    flat = _sens(
        control=None,
        control_verdict=None,
        control_distance=None,
        try_control=None,
        reason="the baseline's next-token distributions are flat (median p(top-1)/p(top-k) 1.0000 <= 1.05)",
    )
    assert weakness(flat) == flat.reason
    line = numerics_headline(_comparison("graphs", "insensitive", "numerically equivalent", 2.6e-5), flat)
    assert line.endswith("are flat (median p(top-1)/p(top-k) 1.0000 <= 1.05)") and "try" not in line
