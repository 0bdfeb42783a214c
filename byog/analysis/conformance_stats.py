"""Conformance formulas: the sampling chi-square and the rule that holds a candidate to its baseline.

**Sampling distribution at temperature 1.** At one fixed position (the first output token of a
fixed prompt) the server reports the top-k probabilities ``p_j`` (``logprobs = k``; vLLM's
default ``raw_logprobs`` are the unmodified model distribution, which at temperature 1 with no
top-p/top-k is the sampling distribution). N independent samples of that token give observed
counts ``O_j``. Categories: each reported token, plus "other" with ``p_other = 1 - Σ p_j``;
categories whose expected count ``N p`` is below ``MIN_EXPECTED`` (5, the textbook condition
for the chi-square approximation) are merged into "other" (and "other" itself, if still below
5, into the smallest remaining category). Then

    X² = Σ_c (O_c - N p_c)² / (N p_c),   dof = C - 1,   p-value = P(χ²_dof ≥ X²)

and the check passes when the p-value is at least ``ALPHA`` (1e-3: a correct server fails it
once in a thousand runs; a sampler that ignores temperature or mis-normalises fails it with
near certainty at N = 400).

**Holding the candidate to the baseline.** Each check is pass/fail per server. For a
(candidate, baseline) pair a check is:

- ``pass`` when the candidate passes it;
- ``fail`` when the candidate fails a check the baseline passes (a regression);
- ``not held`` when both fail (the stock server cannot do it either; reported, not counted).

The pair conforms when no check is ``fail``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

MIN_EXPECTED = 5.0
ALPHA = 1e-3

Outcome = Literal["pass", "fail", "not held"]


class ChiSquare(TypedDict):
    """Pearson's test of observed samples against the reported probabilities."""

    samples: int
    categories: int
    chi2: float
    dof: int
    p_value: float
    passed: bool


def chi_square_categories(probs: Mapping[int, float], counts: Mapping[int, int]) -> tuple[list[float], list[int]]:
    """(expected probabilities, observed counts) per category after the merging rule above.

    ``probs``: reported token -> probability; ``counts``: sampled token -> times seen (tokens
    outside ``probs`` count as "other").
    """
    n = sum(counts.values())
    kept = sorted((p, tok) for tok, p in probs.items() if n * p >= MIN_EXPECTED)
    expected = [p for p, _ in kept]
    observed = [int(counts.get(tok, 0)) for _, tok in kept]
    p_other = max(0.0, 1.0 - sum(expected))
    o_other = n - sum(observed)
    if n * p_other < MIN_EXPECTED and expected:
        # fold "other" into the least likely kept category (the list is sorted ascending)
        expected[0] += p_other
        observed[0] += o_other
    else:
        expected.append(p_other)
        observed.append(o_other)
    return expected, observed


def chi_square(probs: Mapping[int, float], counts: Mapping[int, int]) -> ChiSquare:
    """X², dof and p-value of observed samples against reported probabilities (see the module docstring)."""
    from scipy.special import chdtrc  # the chi-square survival function, without scipy.stats' import

    expected, observed = chi_square_categories(probs, counts)
    n = sum(observed)
    stat = sum((o - n * p) ** 2 / (n * p) for p, o in zip(expected, observed, strict=True) if p > 0)
    dof = len(expected) - 1
    p_value = float(chdtrc(dof, stat)) if dof > 0 else 1.0
    return {
        "samples": n,
        "categories": len(expected),
        "chi2": float(stat),
        "dof": dof,
        "p_value": p_value,
        "passed": p_value >= ALPHA,
    }


def hold_to_baseline(
    baseline: Sequence[Mapping[str, Any]], candidate: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One row per check of the candidate: its outcome against the baseline and the candidate's reason."""
    base = {str(r["check"]): bool(r["passed"]) for r in baseline}
    rows = []
    for record in candidate:
        name = str(record["check"])
        outcome: Outcome
        if record["passed"]:
            outcome = "pass"
        elif base.get(name, True):
            outcome = "fail"
        else:
            outcome = "not held"
        rows.append({"check": name, "outcome": outcome, "baseline_passed": base.get(name), "reason": record["reason"]})
    return rows


def conforms(rows: Sequence[Mapping[str, Any]]) -> bool:
    return not any(r["outcome"] == "fail" for r in rows)
