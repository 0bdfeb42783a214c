"""The write-up-shaped report sections: B x TP and B x ISL matrices, acceptance with CIs, J/token."""

from __future__ import annotations

from byog.report.sections import decode as dm
from byog.schemas.bench import (
    BenchSummary,
    ClockStats,
    Percentiles,
    PointMetrics,
    PointSummary,
    PowerMetrics,
)
from byog.schemas.evals import EvalSummary
from byog.schemas.summary import Summary, SummaryPlan


def point(
    server: str, workload: str, b: int, isl: int, step_s: float, valid: bool = True, **extra: object
) -> PointSummary:
    p = Percentiles()
    metrics = PointMetrics(
        ttft_s=p,
        tpot_s=p,
        itl_s=p,
        itl_request_mean_s=p,
        e2e_latency_s=p,
        tok_s_user=Percentiles(p50=1 / step_s),
        decode_step_s=step_s,
        decode_tok_s=b / step_s,
        **extra,
    )
    return PointSummary(
        server=server,
        point_id=f"{workload}-b{b}-isl{isl}-osl256",
        workload=workload,
        kind="batch",
        batch_size=b,
        isl=isl,
        osl=256,
        api="completions",
        valid=valid,
        invalid_reasons=[] if valid else ["x"],
        n_requests=b,
        metrics=metrics,
    )


def summary(points: list[PointSummary]) -> Summary:
    return Summary(
        plan=SummaryPlan(name="t", baseline="base", candidates=[]),
        bench=BenchSummary(points=points),
        evals=EvalSummary(),
    )


def test_b_by_isl_matrix_of_one_server() -> None:
    pts = [point("stock", "longctx", b, isl, 0.001 * b + isl / 1e6) for b in (1, 16) for isl in (1024, 100000)]
    pts[-1] = point("stock", "longctx", 16, 100000, 0.116, valid=False)
    text = "\n".join(dm.matrices(summary(pts), {"stock": 2}))
    assert "**longctx, stock (TP2): decode step time (ms)**" in text
    assert "|  | ISL 1k | ISL 100,000 |" in text
    assert "| B=1 | 2.024 | 101 |" in text  # 1 ms + 1.024 ms; 1 ms + 100 ms
    assert "| B=16 | 17.02 | 116* |" in text  # the invalid point is starred
    assert "**longctx, stock (TP2): tok/s/user P50**" in text


def test_b_by_tp_matrix_of_one_isl() -> None:
    pts = [point(s, "decode", b, 1, step) for s, step in (("cand-tp8", 0.004), ("cand-tp16", 0.002)) for b in (1, 2)]
    text = "\n".join(dm.matrices(summary(pts), {"cand-tp8": 8, "cand-tp16": 16}))
    assert "**decode, ISL 1, OSL 256: tok/s/user P50**" in text
    assert "|  | cand-tp8 (TP8) | cand-tp16 (TP16) |" in text
    assert "| B=1 | 250 | 500 |" in text


def test_acceptance_with_cis_and_energy_beside_tok_s() -> None:
    spec = point(
        "spec",
        "spec-decode",
        1,
        1,
        0.005,
        acceptance_length=5.73,
        acceptance_length_ci=[5.6, 5.86],
        acceptance_per_position=[1.0, 0.9],
        acceptance_per_position_ci=[[0.95, 1.0], [0.8, 0.96]],
        draft_coverage=0.98,
        tokens_per_request_step=5.64,
        crosscheck_ratio=1.016,
        power=PowerMetrics(
            available=True,
            energy_source="counter",
            window="decode",
            energy_j=10.0,
            j_per_token=0.05,
            mean_power_w=450.0,
            sm_clock_mhz=ClockStats(mean=1980.0, min=1965.0),
            throttle={},
        ),
    )
    stock = point(
        "stock", "spec-decode", 1, 1, 0.004, power=PowerMetrics(available=False, reason="nvidia-ml-py is not installed")
    )
    s = summary([spec, stock])
    text = "\n".join(dm.speculation(s))
    # wider than GitHub's column: two tables, each keyed by server and point
    assert (
        "| spec | spec-decode-b1-isl1-osl256 | 5.73 [5.60, 5.86] | 1.00 [0.95, 1.00], 0.90 [0.80, 0.96] | 0.98 |"
        in text
    )
    assert "| spec | spec-decode-b1-isl1-osl256 | 5.64 | 1.016 |" in text
    assert "stock" not in text  # no acceptance length without speculation
    text = "\n".join(dm.energy(s))
    rows = [line for line in text.splitlines() if line.startswith("| spec | spec-decode-b1-isl1-osl256 |")]
    cells = " ".join(r.removeprefix("| spec | spec-decode-b1-isl1-osl256 |") for r in rows)
    # 10 columns: split into tables that fit GitHub's column, each keyed by server and point
    assert " ".join(cells.split()) == "200 | 200 | 50 | 450 | 1980 / 1965 | 0% | none | counter, decode |"
    only_cpu = "\n".join(dm.energy(summary([stock])))
    assert only_cpu == "### Energy\n\nNot measured: nvidia-ml-py is not installed.\n"
