"""One sentence per numerics comparison for the headline: the verdict, and what the control showed.

Plain text from summary.json's ``numerics`` (the report escapes it for markdown, the console and
``benchmarks/numerics_table.py`` print it as is). An insensitive baseline names its control, the
control's distance and the menu entry to try; a finding that stands beside a weak control says both.
"""

from __future__ import annotations

from byog.schemas.numerics import BaselineSensitivity, NumericsComparison

NUMERICS_MARK = {"numerically equivalent": "✅", "drifts": "⚠️", "diverges": "❌", "insensitive": "➖"}


def _envelopes(value: float | None) -> str:
    return "no judged bucket" if value is None else f"{value:.3g} envelopes"


def _control(sens: BaselineSensitivity) -> str:
    """'the control fp16 (stock.control)', or the server alone for a custom change."""
    if sens.control_change and sens.control and sens.control_change != sens.control:
        return f"the control {sens.control_change} ({sens.control})"
    return f"the control {sens.control_change or sens.control or '(none)'}"


def _try(sens: BaselineSensitivity) -> str:
    return f"; try numerics.control: {sens.try_control}" if sens.try_control else ""


def weakness(sens: BaselineSensitivity) -> str:
    """Why the baseline is insensitive, naming the control, its distance and what to try."""
    if sens.control is not None and sens.control_verdict is not None:
        return (
            f"{_control(sens)} landed at {_envelopes(sens.control_distance)}, within the envelope, so this "
            f"baseline cannot show a change of that size{_try(sens)}"
        )
    return sens.reason


def numerics_headline(comparison: NumericsComparison, sens: BaselineSensitivity | None) -> str:
    """The comparison's headline, e.g. '⚠️ drifts at 37.2 envelopes; the control fp16 (stock.control) was
    weak: 0.794 envelopes, ...'."""
    verdict = comparison.verdict
    mark = NUMERICS_MARK[verdict]
    if verdict == "insensitive":
        rule = comparison.rule_verdict
        said = f" (the rule alone: {rule}, {_envelopes(comparison.max_distance)})" if rule else ""
        return f"{mark} insensitive{said}: {weakness(sens) if sens else 'no sensitivity recorded'}"
    found = f"{mark} {verdict} at {_envelopes(comparison.max_distance)}"
    if sens is None:
        return found
    if not sens.sensitive:
        return f"{found}, a difference that stands although the baseline is insensitive: {weakness(sens)}"
    return f"{found}; {_control(sens)} landed at {_envelopes(sens.control_distance)}"
