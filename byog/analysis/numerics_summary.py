"""summary.json's ``numerics``: every aggregate and verdict, from the raw per-position rows alone.

For each (candidate, baseline) pair of the plan whose numerics are complete on both servers,
two families of positions are compared (formulas in ``byog.analysis.numerics``), the
baseline's ``alone`` pass (one request at a time) being the reference and the other server's
``together`` pass (every request at once) the other side:

- ``prefill``: the teacher-forced prompt positions: every position of every prompt, the same
  token path on both servers by construction, over the whole context;
- ``decode``: the greedy output positions of each prompt before the two outputs first differ.

The A/A run is the same comparison with the baseline's own ``together`` pass as the other side.
Conformance: each server's checks as recorded (the chi-square's pass/fail recomputed from the
recorded counts and probabilities), and each candidate held to what its baseline passes.
"""

from __future__ import annotations

from byog.analysis import numerics as nm
from byog.analysis.conformance_stats import chi_square, hold_to_baseline
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.schemas.migrate import migrate
from byog.schemas.numerics import (
    NUMERICS_COLUMNS,
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
)
from byog.schemas.plan import NumericsTolerance, Plan
from byog.schemas.tables import read_columns

REFERENCE_PASS = "alone"
OTHER_PASS = "together"
FAMILIES: tuple[Family, ...] = ("prefill", "decode")


def load_pass(run_dir: RunDir, server: str, pass_name: str) -> dict[Family, nm.PassArrays]:
    """One pass's rows, split into its prefill (prompt) and decode (output) positions."""
    cols = read_columns(run_dir.numerics_rows(server, pass_name), NUMERICS_COLUMNS)
    output = cols.pop("output")
    rows = [dict(zip(cols, values, strict=True)) for values in zip(*cols.values(), strict=True)]
    return {
        "prefill": nm.PassArrays.from_rows([r for r, out in zip(rows, output, strict=True) if not out]),
        "decode": nm.PassArrays.from_rows([r for r, out in zip(rows, output, strict=True) if out]),
    }


def _buckets(metrics: nm.PositionMetrics) -> list[NumericsBucket]:
    return [NumericsBucket(**row) for row in nm.aggregate(metrics)]


def family_side(
    family: Family, ref: nm.PassArrays, other: nm.PassArrays
) -> tuple[list[NumericsBucket], DivergenceStats | None]:
    """Bucket rows of one family for one (reference, other) pair, and for ``decode`` the divergences."""
    if family == "prefill":
        return _buckets(nm.compare_positions(ref, other)), None
    found = nm.divergences(ref, other)
    metrics = nm.compare_positions(nm.before_divergence(ref, found), nm.before_divergence(other, found))
    stats = DivergenceStats(**nm.divergence_stats(found), first_divergence=found)
    return _buckets(metrics), stats


def compare_family(
    family: Family,
    reference: nm.PassArrays,
    aa_other: nm.PassArrays,
    candidate: nm.PassArrays,
    tolerance: NumericsTolerance,
) -> FamilyComparison:
    aa, aa_div = family_side(family, reference, aa_other)
    cand, cand_div = family_side(family, reference, candidate)
    verdict, reasons = nm.verdict([b.model_dump() for b in cand], [b.model_dump() for b in aa], tolerance)
    return FamilyComparison(
        family=family,
        verdict=verdict,
        reasons=reasons,
        candidate=cand,
        aa=aa,
        candidate_divergence=cand_div,
        aa_divergence=aa_div,
    )


def read_numerics_record(run_dir: RunDir, server: str) -> NumericsRecord:
    path = run_dir.numerics_record(server)
    return NumericsRecord.model_validate(migrate("numerics_record", read_json(path), label=str(path)))


def read_conformance_record(run_dir: RunDir, server: str) -> ConformanceRecord:
    path = run_dir.conformance_record(server)
    return ConformanceRecord.model_validate(migrate("conformance_record", read_json(path), label=str(path)))


def compare_servers(run_dir: RunDir, candidate: str, baseline: str, tolerance: NumericsTolerance) -> NumericsComparison:
    ref, aa = load_pass(run_dir, baseline, REFERENCE_PASS), load_pass(run_dir, baseline, OTHER_PASS)
    cand = load_pass(run_dir, candidate, OTHER_PASS)
    families = [compare_family(f, ref[f], aa[f], cand[f], tolerance) for f in FAMILIES]
    worst = max(families, key=lambda f: nm.SEVERITY[f.verdict]).verdict
    base_rec, cand_rec = read_numerics_record(run_dir, baseline), read_numerics_record(run_dir, candidate)
    return NumericsComparison(
        candidate=candidate,
        baseline=baseline,
        verdict=worst,
        families=families,
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
    comparisons = [compare_servers(run_dir, c, b, tolerance) for c, b in pairs if {c, b} <= have_numerics]
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
        tolerance=tolerance, comparisons=comparisons, conformance_servers=conf_servers, conformance=conf_pairs
    )
