"""summary.json's ``numerics``: every aggregate and verdict, from the raw per-position rows alone.

For each (candidate, baseline) pair of the plan whose numerics are complete on both servers,
two families of positions are compared (formulas in ``byog.analysis.numerics``), the
baseline's ``alone`` pass (one request at a time) being the reference and the other server's
``together`` pass (every request at once) the other side:

- ``prefill``: the teacher-forced prompt positions: every position of every prompt, the same
  token path on both servers by construction, over the whole context;
- ``decode``: the greedy output positions of each prompt before the two outputs first differ.

The A/A run is the same comparison with the baseline's own ``together`` pass as the other side,
the A/A′ run with its envelope variant's (``byog.plans.numerics_roles``); per baseline,
``baseline_sensitivity`` says whether its comparisons are evidence at all (flat distributions, or
a control the differential does not see, make them "insensitive").
Conformance: each server's checks as recorded (the chi-square's pass/fail recomputed from the
recorded counts and probabilities), and each candidate held to what its baseline passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from byog.analysis import numerics
from byog.analysis.conformance_stats import chi_square, hold_to_baseline
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.plans.numerics_menu import detect_platform, stronger_control
from byog.plans.numerics_roles import StockRoles, control_choice, derived_servers, resolve_control, stock_roles
from byog.schemas.migrate import migrate
from byog.schemas.numerics import (
    NUMERICS_COLUMNS,
    BaselineSensitivity,
    BucketDistance,
    ConformanceCheck,
    ConformanceComparison,
    ConformanceRecord,
    ConformanceResult,
    ConformanceRow,
    ConformanceServer,
    DivergenceStats,
    Family,
    FamilyComparison,
    NumericsBucket,
    NumericsComparison,
    NumericsRecord,
    NumericsSummary,
    NumericsVerdict,
    RuleVerdict,
)
from byog.schemas.plan import NumericsTolerance, Plan
from byog.schemas.tables import read_columns

REFERENCE_PASS = "alone"
OTHER_PASS = "together"
FAMILIES: tuple[Family, ...] = ("prefill", "decode")


def load_pass(run_dir: RunDir, server: str, pass_name: str) -> dict[Family, numerics.PassArrays]:
    """One pass's rows, split into its prefill (prompt) and decode (output) positions."""
    cols = read_columns(run_dir.numerics_rows(server, pass_name), NUMERICS_COLUMNS)
    output = cols.pop("output")
    rows = [dict(zip(cols, values, strict=True)) for values in zip(*cols.values(), strict=True)]
    return {
        "prefill": numerics.PassArrays.from_rows([r for r, out in zip(rows, output, strict=True) if not out]),
        "decode": numerics.PassArrays.from_rows([r for r, out in zip(rows, output, strict=True) if out]),
    }


def _buckets(metrics: numerics.PositionMetrics) -> list[NumericsBucket]:
    return [NumericsBucket(**row) for row in numerics.aggregate(metrics)]


def family_side(
    family: Family, ref: numerics.PassArrays, other: numerics.PassArrays
) -> tuple[list[NumericsBucket], DivergenceStats | None]:
    """Bucket rows of one family for one (reference, other) pair, and for ``decode`` the divergences."""
    if family == "prefill":
        return _buckets(numerics.compare_positions(ref, other)), None
    found = numerics.divergences(ref, other)
    metrics = numerics.compare_positions(
        numerics.before_divergence(ref, found), numerics.before_divergence(other, found)
    )
    stats = DivergenceStats(**numerics.divergence_stats(found), first_divergence=found)
    return _buckets(metrics), stats


def compare_family(
    family: Family,
    reference: numerics.PassArrays,
    aa_other: numerics.PassArrays,
    variant: numerics.PassArrays | None,
    candidate: numerics.PassArrays,
    tolerance: NumericsTolerance,
) -> FamilyComparison:
    aa, aa_div = family_side(family, reference, aa_other)
    var, var_div = family_side(family, reference, variant) if variant is not None else ([], None)
    cand, cand_div = family_side(family, reference, candidate)
    rows = [b.model_dump() for b in cand], [b.model_dump() for b in aa], [b.model_dump() for b in var]
    verdict, reasons = numerics.verdict(*rows, tolerance=tolerance)
    return FamilyComparison(
        family=family,
        verdict=verdict,
        reasons=reasons,
        candidate=cand,
        aa=aa,
        variant=var,
        distances=[BucketDistance(**d) for d in numerics.distances(*rows, tolerance=tolerance)],
        candidate_divergence=cand_div,
        aa_divergence=aa_div,
        variant_divergence=var_div,
    )


def _worst(families: list[FamilyComparison]) -> RuleVerdict:
    return max(families, key=lambda f: numerics.SEVERITY[f.verdict]).verdict


def _max_distance(families: list[FamilyComparison]) -> float | None:
    judged = [d.distance for f in families for d in f.distances if d.judged]
    return max(judged) if judged else None


def read_numerics_record(run_dir: RunDir, server: str) -> NumericsRecord:
    path = run_dir.numerics_record(server)
    return NumericsRecord.model_validate(migrate("numerics_record", read_json(path), label=str(path)))


def read_conformance_record(run_dir: RunDir, server: str) -> ConformanceRecord:
    path = run_dir.conformance_record(server)
    return ConformanceRecord.model_validate(migrate("conformance_record", read_json(path), label=str(path)))


class BaselinePasses:
    """One baseline's passes, loaded once for all its comparisons: the reference, A/A and A/A' sides."""

    def __init__(self, run_dir: RunDir, baseline: str, variant: str | None) -> None:
        self.reference = load_pass(run_dir, baseline, REFERENCE_PASS)
        self.aa = load_pass(run_dir, baseline, OTHER_PASS)
        self.variant = load_pass(run_dir, variant, OTHER_PASS) if variant is not None else None

    def families(self, run_dir: RunDir, other: str, tolerance: NumericsTolerance) -> list[FamilyComparison]:
        cand = load_pass(run_dir, other, OTHER_PASS)
        return [
            compare_family(
                f, self.reference[f], self.aa[f], self.variant[f] if self.variant else None, cand[f], tolerance
            )
            for f in FAMILIES
        ]


def insensitive_verdict(rule: RuleVerdict, sensitive: bool) -> NumericsVerdict:
    """Sensitivity is the proof a no-difference verdict needs: only "numerically equivalent" of an
    insensitive baseline becomes "insensitive"; a difference the rule found ("drifts", "diverges") stands."""
    return "insensitive" if not sensitive and rule == "numerically equivalent" else rule


@dataclass(frozen=True)
class ControlContext:
    """What the summary says of the control beside its distance: its menu name, why, the entry to try."""

    change: str | None
    why: str | None
    try_next: str | None


def control_context(run_dir: RunDir, plan: Plan) -> ControlContext:
    """From the plan and the run's env.json (where byog and its local servers ran)."""
    env = read_json(run_dir.env_json) if run_dir.env_json.is_file() else None
    choice = control_choice(plan, env)
    platform = detect_platform(env).kind
    return ControlContext(choice.name, choice.why, stronger_control(choice.name, platform))


def baseline_sensitivity(
    run_dir: RunDir,
    baseline: str,
    loaded: BaselinePasses,
    roles: StockRoles | None,
    complete: set[str],
    tolerance: NumericsTolerance,
    context: ControlContext | None = None,
) -> BaselineSensitivity:
    """Flat next-token distributions, or a control the differential does not see: insensitive."""
    reference = numerics.PassArrays.concat([loaded.reference[f] for f in FAMILIES])
    ratio, top1 = numerics.head_ratio(reference), numerics.mean_top1_prob(reference)
    variant = roles.variant if roles is not None and roles.variant in complete else None
    control = roles.control if roles is not None and roles.control in complete else None
    base: dict[str, Any] = {"baseline": baseline, "head_ratio": ratio, "mean_top1_prob": top1, "variant": variant}
    if context is not None and roles is not None and roles.not_derived is None:
        base |= {"control_change": context.change, "control_why": context.why}
    if ratio is not None and ratio <= tolerance.flat_head_ratio:
        return BaselineSensitivity(
            **base,
            sensitive=False,
            control=control,
            reason=(
                f"the baseline's next-token distributions are flat (median p(top-1)/p(top-k) {ratio:.4f} "
                f"<= {tolerance.flat_head_ratio:g}): this model cannot show kernel differences"
            ),
        )
    if control is None:
        return BaselineSensitivity(
            **base,
            sensitive=False,
            control=None,
            reason=(roles.not_derived if roles is not None else None) or "no sensitivity control ran on this baseline",
        )
    families = loaded.families(run_dir, control, tolerance)
    verdict, distance = _worst(families), _max_distance(families)
    seen = verdict != "numerically equivalent"
    shown = f"{distance:.3g} envelopes" if distance is not None else "no judged bucket"
    if not seen and context is not None:
        base["try_control"] = context.try_next
    return BaselineSensitivity(
        **base,
        sensitive=seen,
        control=control,
        control_verdict=verdict,
        control_distance=distance,
        control_families=families,
        reason=(
            f"the control '{control}' lands at {shown} ({verdict})"
            if seen
            else f"the control '{control}' lands within the envelope ({shown}): this model on this server "
            "cannot show a change of that size"
        ),
    )


def compare_servers(
    run_dir: RunDir,
    candidate: str,
    loaded: BaselinePasses,
    sensitivity: BaselineSensitivity,
    tolerance: NumericsTolerance,
) -> NumericsComparison:
    baseline = sensitivity.baseline
    base_rec = read_numerics_record(run_dir, baseline)
    if not run_dir.numerics_complete(candidate):  # not run: its baseline showed it had nothing to learn
        return NumericsComparison(
            candidate=candidate, baseline=baseline, verdict="insensitive", families=[], baseline_wall_s=0.0
        )
    families = loaded.families(run_dir, candidate, tolerance)
    worst = _worst(families)
    cand_rec = read_numerics_record(run_dir, candidate)
    return NumericsComparison(
        candidate=candidate,
        baseline=baseline,
        verdict=insensitive_verdict(worst, sensitivity.sensitive),
        rule_verdict=worst,
        families=families,
        max_distance=_max_distance(families),
        candidate_wall_s=sum(p.wall_s for p in cand_rec.passes),
        baseline_wall_s=sum(p.wall_s for p in base_rec.passes),
        plain_decode_wall_s=base_rec.plain_decode_wall_s,
    )


def _conformance_checks(record: ConformanceRecord) -> list[ConformanceCheck]:
    """The recorded checks; the chi-square's pass/fail recomputed from its recorded counts."""
    out = []
    for check in record.checks:
        detail = check.detail
        if check.check == "sampling_chi_square" and "reported_top" in detail and "counts" in detail:
            probs = {int(k): float(v) for k, v in detail["reported_top"].items()}
            counts = {int(k): int(v) for k, v in detail["counts"].items()}
            check = check.model_copy(update={"passed": bool(chi_square(probs, counts)["passed"])})
        out.append(check)
    return out


def summarize_numerics(run_dir: RunDir, plan: Plan) -> NumericsSummary | None:
    """None when the run has neither a numerics section nor numerics/conformance files."""
    pairs = plan.comparisons
    servers = list(dict.fromkeys(s for pair in pairs for s in pair))
    have_numerics = {s for s in servers if run_dir.numerics_complete(s)}
    have_conformance = {s for s in servers if run_dir.conformance_record(s).is_file()}
    if plan.numerics is None and not have_numerics and not have_conformance:
        return None
    tolerance = plan.numerics.tolerance if plan.numerics is not None else NumericsTolerance()
    context = control_context(run_dir, plan)
    plan = resolve_control(plan, read_json(run_dir.env_json) if run_dir.env_json.is_file() else None)
    roles = stock_roles(plan)
    complete = {s for s in [*servers, *derived_servers(plan)] if run_dir.numerics_complete(s)}
    sensitivity: dict[str, BaselineSensitivity] = {}
    loaded: dict[str, BaselinePasses] = {}
    comparisons = []
    for c, b in pairs:
        if b not in have_numerics:
            continue
        if b not in sensitivity:
            role = roles.get(b)
            loaded[b] = BaselinePasses(
                run_dir, b, role.variant if role is not None and role.variant in complete else None
            )
            sensitivity[b] = baseline_sensitivity(run_dir, b, loaded[b], role, complete, tolerance, context)
        if c in have_numerics or not sensitivity[b].sensitive:
            comparisons.append(compare_servers(run_dir, c, loaded[b], sensitivity[b], tolerance))
    checks = {s: _conformance_checks(read_conformance_record(run_dir, s)) for s in servers if s in have_conformance}
    conf_servers = [
        ConformanceServer(
            server=s,
            passed=sum(c.passed for c in cs),
            failed=sum(not c.passed for c in cs),
            checks=[ConformanceResult(check=c.check, passed=c.passed, reason=c.reason) for c in cs],
        )
        for s, cs in checks.items()
    ]
    conf_pairs = []
    for c, b in pairs:
        if c in checks and b in checks:
            rows = hold_to_baseline([x.model_dump() for x in checks[b]], [x.model_dump() for x in checks[c]])
            conf_pairs.append(
                ConformanceComparison(
                    candidate=c,
                    baseline=b,
                    conforms=not any(r["outcome"] == "fail" for r in rows),
                    checks=[ConformanceRow(**r) for r in rows],
                )
            )
    return NumericsSummary(
        tolerance=tolerance,
        comparisons=comparisons,
        sensitivity=list(sensitivity.values()),
        conformance_servers=conf_servers,
        conformance=conf_pairs,
    )
