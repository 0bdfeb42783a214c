"""Did a reproduction reproduce? The comparison rule, as pure functions of two runs' raw records.

A value (one server's metric at one point, e.g. decode tok/s at B=1) is **reproduced** when

    |ln(x_r / x_o)| <= sqrt(w_o^2 + w_r^2) + ln(1 + delta)

- ``x_o``, ``x_r``: the original's and the reproduction's value, each computed by
  ``byog.analysis.bench_summary`` from its own raw rows;
- ``w = (ln high - ln low) / 2``: half the width, in log units, of that side's 95% percentile
  bootstrap CI over its waves (batch) or requests (``bench_summary.point_estimate``). Each run's
  CI says how far its own number may sit from its expectation by sampling alone; two
  independent estimates differ by sampling alone within ``sqrt(w_o^2 + w_r^2)`` (the half-width
  of the CI of their difference, treating each log estimate as normal). With ``w_r = 0`` the
  rule is "inside the original's CI widened by delta". A side with one unit has no CI: its ``w``
  counts as 0 and the check says so;
- ``delta``: between-run noise a bootstrap within one run cannot see (a server restart, other
  clocks, a different host of the same kind). ``DEFAULT_RUN_NOISE`` is what byog measured
  between two server starts of the same config (docs/reproduce.md has the numbers and command);
  a maintainer may set another with ``--run-noise``.

A ratio (candidate / baseline at one point, from each run's summary.json, with the summary's own
bootstrap CI) is reproduced by the same rule with ``delta`` counted for both sides:
``sqrt(2) * ln(1 + delta)``. Ratios are compared on any hardware; values only when both runs
ran on the same kind (``byog.analysis.hardware.same_kind``): on another GPU an absolute number
is not expected to match, a speed-up may be.

**The family of checks.** One failing check fails the reproduction, so with m checks each at a 95%
CI an honest reproduction would fail by sampling alone up to 1 - 0.95^m of the time (60% for the
18 checks of two points). Every compared check's sampling term is therefore widened by
``z(1 - alpha/2m) / z(1 - alpha/2)`` (Bonferroni over the m checks compared, alpha = 1 - CI level:
1.53 for m = 18), so the whole family holds at the CI level; ``for_the_family`` applies it once m
is known and the record keeps m and the scale (``rule.checks_compared``, ``rule.family_z_scale``).

A point invalid on either side (``byog.analysis.validity``) is shown but **not compared**: an
invalid number is not a result, so it can neither confirm nor refute one.

Eval items: the first ``n`` items of each task are re-run greedily (temperature 0, the original's
pass-0 seed); an item agrees when the extracted answers are equal. The eval reproduces when the
share of agreeing items is at least ``DEFAULT_EVAL_MIN_AGREEMENT``: greedy decoding of the same
weights differs only where floating-point order (batch composition, kernels) flips a near-tie.

Numerics: each comparison the reproduction re-ran reproduces when its verdict (candidate against
its baseline, ``byog.analysis.numerics_summary``) is the original's; "insensitive" on either side
is not compared (``compare_numerics``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from byog.analysis.bench_summary import CI_LEVEL, point_estimate
from byog.analysis.reproduction_defaults import DEFAULT_RUN_NOISE
from byog.core.paths import RunDir
from byog.schemas.bench import PointComparison, PointSummary
from byog.schemas.evals import EvalItemRow
from byog.schemas.numerics import NumericsSummary
from byog.schemas.reproduction import (
    EvalReproduction,
    MetricCheck,
    NumericsReproduction,
    Outcome,
    PointReproduction,
    ReproductionRule,
)
from byog.schemas.summary import Summary

DEFAULT_EVAL_MIN_AGREEMENT = 0.8
METRICS = ("decode_tok_s", "tpot_s.p50", "ttft_s.p50")  # the summary's headline metrics less tok_s_user (= 1 / TPOT)


def default_rule(run_noise: float = DEFAULT_RUN_NOISE) -> ReproductionRule:
    return ReproductionRule(
        run_noise=run_noise, ci_level=CI_LEVEL, metrics=list(METRICS), eval_min_agreement=DEFAULT_EVAL_MIN_AGREEMENT
    )


@dataclass(frozen=True)
class Estimate:
    value: float | None
    low: float | None = None
    high: float | None = None

    @property
    def half_width(self) -> float | None:
        """Half the CI's width in natural-log units; None without a (positive) CI."""
        if self.low is None or self.high is None or self.low <= 0 or self.high <= 0:
            return None
        return (math.log(self.high) - math.log(self.low)) / 2


def tolerance(
    original: Estimate, reproduced: Estimate, run_noise: float, sides: int = 1, z_scale: float = 1.0
) -> float:
    """z_scale * sqrt(w_o^2 + w_r^2) + sqrt(sides) * ln(1 + run_noise): the largest |ln(x_r / x_o)| that reproduces."""
    w_o, w_r = original.half_width or 0.0, reproduced.half_width or 0.0
    return z_scale * math.sqrt(w_o**2 + w_r**2) + math.sqrt(sides) * math.log1p(run_noise)


def family_z_scale(compared: int, ci_level: float = CI_LEVEL) -> float:
    """z(1 - alpha/2m) / z(1 - alpha/2) for m = ``compared`` checks (1 for m <= 1): Bonferroni's widening."""
    if compared <= 1:
        return 1.0
    alpha = 1 - ci_level
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / (2 * compared)) / normal.inv_cdf(1 - alpha / 2)


def judge(
    kind: str,
    server: str,
    point_id: str,
    metric: str,
    original: Estimate,
    reproduced: Estimate,
    run_noise: float,
    *,
    baseline: str | None = None,
    skip: str = "",
    z_scale: float = 1.0,
) -> MetricCheck:
    """One number held against its reproduction; ``skip`` (a reason) shows it without comparing."""
    common = dict(
        kind=kind,
        server=server,
        baseline=baseline,
        point_id=point_id,
        metric=metric,
        original=original.value,
        original_low=original.low,
        original_high=original.high,
        reproduced=reproduced.value,
        reproduced_low=reproduced.low,
        reproduced_high=reproduced.high,
    )
    if not original.value or not reproduced.value or original.value < 0 or reproduced.value < 0:
        missing = "the original" if not original.value else "the reproduction"
        return MetricCheck(**common, outcome="not compared", note=skip or f"{missing} has no value")
    deviation = math.log(reproduced.value / original.value)
    allowed = tolerance(original, reproduced, run_noise, sides=2 if kind == "ratio" else 1, z_scale=z_scale)
    if skip:
        return MetricCheck(**common, deviation=deviation, tolerance=allowed, outcome="not compared", note=skip)
    no_ci = [side for side, e in (("original", original), ("reproduction", reproduced)) if e.half_width is None]
    note = f"no CI for the {' or '.join(no_ci)} (one unit): only the noise allowance" if no_ci else ""
    outcome: Outcome = "reproduced" if abs(deviation) <= allowed else "not reproduced"
    return MetricCheck(**common, deviation=deviation, tolerance=allowed, outcome=outcome, note=note)


def combine(outcomes: Sequence[Outcome]) -> Outcome:
    """Not reproduced if anything was not; reproduced if something was; else not compared."""
    if "not reproduced" in outcomes:
        return "not reproduced"
    return "reproduced" if "reproduced" in outcomes else "not compared"


def for_the_family(
    points: Sequence[PointReproduction], run_noise: float, ci_level: float = CI_LEVEL
) -> tuple[list[PointReproduction], int, float]:
    """Every compared check judged again with the family's widening; (points, m compared, z scale).

    m is known only once every check exists; the second judgement reuses each check's stored
    estimates, so no bootstrap runs twice.
    """
    compared = sum(c.outcome != "not compared" for p in points for c in p.checks)
    scale = family_z_scale(compared, ci_level)
    widened = []
    for p in points:
        checks = [
            c
            if c.outcome == "not compared"
            else judge(
                c.kind,
                c.server,
                c.point_id,
                c.metric,
                Estimate(c.original, c.original_low, c.original_high),
                Estimate(c.reproduced, c.reproduced_low, c.reproduced_high),
                run_noise,
                baseline=c.baseline,
                z_scale=scale,
            )
            for c in p.checks
        ]
        widened.append(p.model_copy(update={"checks": checks, "outcome": combine([c.outcome for c in checks])}))
    return widened, compared, scale


def sample_points(point_ids: Sequence[str], seed_hex: str, k: int) -> list[str]:
    """k point ids chosen by the bundle's hash: rank by sha256(seed ':' id), keep the first k.

    Deterministic for a bundle (anyone re-derives the sample from its manifest hash), and a
    contributor cannot know in advance which points a maintainer will re-run without the final
    manifest, which changes with every byte of the bundle.
    """
    ranked = sorted(dict.fromkeys(point_ids), key=lambda pid: hashlib.sha256(f"{seed_hex}:{pid}".encode()).hexdigest())
    return ranked[:k]


def _invalid(point: PointSummary | None, who: str) -> str:
    if point is None:
        return f"the {who} did not measure this point"
    if not point.valid:
        return f"the {who}'s point is invalid ({'; '.join(point.invalid_reasons)})"
    return ""


def compare_point(
    point_id: str,
    servers: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    original: tuple[RunDir, Summary],
    reproduced: tuple[RunDir, Summary],
    run_noise: float,
    same_hardware: bool,
    seed: int,
) -> PointReproduction:
    """Every value (per server) and every ratio (per pair) of one point, judged."""
    (o_dir, o_sum), (r_dir, r_sum) = original, reproduced
    o_points = {(p.server, p.point_id): p for p in o_sum.bench.points}
    r_points = {(p.server, p.point_id): p for p in r_sum.bench.points}
    checks: list[MetricCheck] = []
    for server in servers:
        skip = (
            _invalid(o_points.get((server, point_id)), "original")
            or _invalid(r_points.get((server, point_id)), "reproduction")
            or ("" if same_hardware else "other hardware: absolute numbers are not expected to match")
        )
        for metric in METRICS:
            o_est = Estimate(*point_estimate(o_dir, server, point_id, metric, seed))
            r_est = Estimate(*point_estimate(r_dir, server, point_id, metric, seed))
            if o_est.value is None and r_est.value is None:
                continue  # the metric does not exist for this kind of point (decode tok/s of a rate point)
            checks.append(judge("value", server, point_id, metric, o_est, r_est, run_noise, skip=skip))
    o_comp = {(c.candidate, c.baseline, c.metric): c for c in o_sum.bench.comparisons if c.point_id == point_id}
    r_comp = {(c.candidate, c.baseline, c.metric): c for c in r_sum.bench.comparisons if c.point_id == point_id}
    for candidate, baseline in pairs:
        skip = next(
            (
                why
                for why in (
                    _invalid(o_points.get((s, point_id)), "original")
                    or _invalid(r_points.get((s, point_id)), "reproduction")
                    for s in (candidate, baseline)
                )
                if why
            ),
            "",
        )
        for metric in METRICS:
            o_c, r_c = o_comp.get((candidate, baseline, metric)), r_comp.get((candidate, baseline, metric))
            if o_c is None and r_c is None:
                continue
            checks.append(
                judge(
                    "ratio",
                    candidate,
                    point_id,
                    metric,
                    _ratio(o_c),
                    _ratio(r_c),
                    run_noise,
                    baseline=baseline,
                    skip=skip,
                )
            )
    any_point = next((p for p in (o_points.get((s, point_id)) for s in servers) if p is not None), None)
    load = any_point.load_label if any_point is not None else "–"
    return PointReproduction(
        point_id=point_id, load=load, servers=list(servers), outcome=combine([c.outcome for c in checks]), checks=checks
    )


def _ratio(c: PointComparison | None) -> Estimate:
    return Estimate(None) if c is None else Estimate(c.ratio, c.ci_low, c.ci_high)


def compare_numerics(
    original: NumericsSummary | None, reproduced: NumericsSummary | None
) -> list[NumericsReproduction]:
    """Each numerics comparison the reproduction re-ran, its verdict against the original's.

    Reproduced when the verdicts are equal. An "insensitive" verdict on either side is not
    compared: it says the method could not see a difference there, so agreeing on it shows nothing.
    Both verdicts are within-run judgements (a candidate against its baseline on the same box), so
    they compare across hardware.
    """
    if reproduced is None:
        return []
    before = {(c.candidate, c.baseline): c.verdict for c in original.comparisons} if original is not None else {}
    out = []
    for c in reproduced.comparisons:
        verdict = before.get((c.candidate, c.baseline))
        if verdict is None:
            outcome: Outcome = "not compared"
            note = "the original has no numerics verdict for this pair"
        elif "insensitive" in (verdict, c.verdict):
            outcome, note = "not compared", "insensitive: the method cannot see a difference on this baseline"
        else:
            outcome = "reproduced" if verdict == c.verdict else "not reproduced"
            note = ""
        out.append(
            NumericsReproduction(
                candidate=c.candidate,
                baseline=c.baseline,
                original=verdict,
                reproduced=c.verdict,
                outcome=outcome,
                note=note,
            )
        )
    return out


def compare_eval_items(
    server: str,
    task: str,
    original: Sequence[EvalItemRow],
    reproduced: Sequence[EvalItemRow],
    min_agreement: float = DEFAULT_EVAL_MIN_AGREEMENT,
) -> EvalReproduction:
    """Agreement of extracted answers on the items both runs scored (pass 0 of each; same item hash)."""
    first = {r.item_id: r for r in original if r.pass_index == 0}
    again = {r.item_id: r for r in reproduced if r.pass_index == 0}
    shared = [i for i in again if i in first]
    changed = [i for i in shared if first[i].item_sha256 != again[i].item_sha256]
    compared = [i for i in shared if i not in changed]
    differing = [i for i in compared if first[i].extracted_answer != again[i].extracted_answer]
    agreed = len(compared) - len(differing)
    notes = []
    if changed:
        notes.append(f"{len(changed)} item(s) have other data than the original's ({', '.join(changed[:3])})")
    if len(shared) < len(again):
        notes.append(f"{len(again) - len(shared)} reproduced item(s) are not in the original")
    if not compared:
        return EvalReproduction(
            server=server,
            task=task,
            items=0,
            agreed=0,
            agreement=None,
            min_agreement=min_agreement,
            outcome="not compared",
            note="; ".join(notes) or "no item to compare",
        )
    agreement = agreed / len(compared)
    return EvalReproduction(
        server=server,
        task=task,
        items=len(compared),
        agreed=agreed,
        agreement=agreement,
        min_agreement=min_agreement,
        differing=differing,
        outcome="reproduced" if agreement >= min_agreement else "not reproduced",
        note="; ".join(notes),
    )
