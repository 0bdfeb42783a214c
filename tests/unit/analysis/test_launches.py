"""R launches per server and the A/A pair in the bench summary (synthetic run directories)."""

from __future__ import annotations

import json
from pathlib import Path

from byog.analysis.perf_equivalence import ONE_LAUNCH_NOTE
from byog.analysis.summary import derive_summary
from byog.report.markdown import render_report
from byog.schemas.bench import read_request_rows, write_request_rows
from byog.schemas.summary import Summary
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

NEW_KEYS = {"launch_points", "launch_shares", "aa", "launches", "ci90_low", "ci90_high", "margin", "launch", "ci_df"}


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_one_launch_adds_nothing_to_the_summary_or_the_report(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run")
    doc = json.loads(run_dir.summary_json.read_text())
    assert not (_keys(doc["bench"]) & NEW_KEYS)
    # the CI of one launch per side says what it leaves out, and labels nothing beyond screening
    assert doc["bench"]["comparisons"] and all(
        c["ci_note"] == ONE_LAUNCH_NOTE and c["label"] == "screening" and c["units"] == "waves"
        for c in doc["bench"]["comparisons"]
    )
    report = run_dir.report_md.read_text()
    assert "## Launches" not in report and f"- 95% CI, candidate vs baseline: {ONE_LAUNCH_NOTE}" in report
    assert "(screening)" in report.split("## Performance", 1)[1]  # every speed-up cell
    assert sorted(p.name for p in (run_dir.root / "bench" / "baseline").iterdir())[0].startswith("decode-")


def test_three_launches_pool_and_split_the_variance(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(launches=3, launch_sd=0.05))
    assert (run_dir.root / "bench" / "candidate" / "launch-3").is_dir()
    assert not (run_dir.root / "bench" / "candidate" / "launch-1").exists()  # launch 1 keeps the old paths
    summary = derive_summary(run_dir)
    bench = summary.bench
    assert (
        len(bench.points) == 6 and len(bench.launch_points) == 12 and {p.launch for p in bench.launch_points} == {2, 3}
    )
    comparisons = [c for c in bench.comparisons if c.metric == "tpot_s.p50"]
    assert comparisons and all(
        c.launches == [3, 3] and c.ci_low is not None and c.units == "launches" and c.ci_df == 4 and c.ci_note is None
        for c in comparisons
    )
    assert all(
        c.label in {"faster", "slower", "equivalent", "within noise"} and c.margin is not None for c in comparisons
    )
    shares = [s for s in bench.launch_shares if s.metric == "tpot_s.p50"]
    assert len(shares) == 6 and all(s.launches == 3 for s in shares)
    # launch sd 5% against per-wave noise of ~0.6%: the launches hold most of the variance
    assert sum(s.share for s in shares) / len(shares) > 0.5
    assert {a.baseline for a in bench.aa} == {"baseline"} and all(len(a.points) == 3 for a in bench.aa)
    # recomputation gives the same document, and it is a valid summary
    again = derive_summary(run_dir).to_json()
    assert again == summary.to_json() and Summary.model_validate(again) == summary
    report = render_report(run_dir, summary)
    assert "## Launches" in report and "Between-launch share" in report and "A/A margin" in report


def test_a_workload_on_one_launch_is_screening_beside_one_on_every_launch(tmp_path: Path) -> None:
    """``launches: 1`` on a workload: its points run on the first launch only and get the one-launch CI
    and label; the other workload keeps the launch t interval over both launches, recomputed the same."""
    spec = SyntheticSpec(launches=2, launch_sd=0.05)
    text = plan_yaml(spec).replace(
        "workloads:\n",
        "workloads:\n  - {kind: batch, name: longctx, launches: 1, batch_sizes: [1], isl: [512], osl: [64], "
        "warmup_waves: 1, waves: 3}\n",
    )
    run_dir = make_run_dir(tmp_path / "run", spec, plan_text=text)
    assert not run_dir.for_launch(2).bench_point("candidate", "longctx-b1-isl512-osl64").exists()
    summary = derive_summary(run_dir)
    bench = summary.bench
    assert {p.point_id.split("-")[0] for p in bench.launch_points} == {"decode"}
    decode = [c for c in bench.comparisons if c.point_id.startswith("decode-") and c.metric == "tpot_s.p50"]
    assert decode and all(c.launches == [2, 2] and c.ci_df == 2 and c.ci_note is None for c in decode)
    longctx = [c for c in bench.comparisons if c.point_id.startswith("longctx-")]
    assert longctx and all(
        c.launches is None and c.ci_note == ONE_LAUNCH_NOTE and c.label == "screening" for c in longctx
    )
    assert derive_summary(run_dir).to_json() == summary.to_json()
    report = render_report(run_dir, summary)  # the pair's CI note counts the points it is about
    assert f"- 95% CI, candidate vs baseline, 1 of 4 points: {ONE_LAUNCH_NOTE}; performance labels: screening" in report


def test_a_launch_flagged_invalid_flags_the_pooled_point(tmp_path: Path) -> None:
    """The pooled value includes every launch, so an invalid launch must not read as a valid result."""
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(launches=3, launch_sd=0.05))
    point_id = "decode-b4-isl32-osl64"
    rows_path = run_dir.for_launch(3).bench_rows("candidate", point_id)
    rows = read_request_rows(rows_path)
    rows[-1].error = "connection reset"
    write_request_rows(rows_path, rows)
    bench = derive_summary(run_dir).bench
    (pooled,) = [p for p in bench.points if (p.server, p.point_id) == ("candidate", point_id)]
    (third,) = [p for p in bench.launch_points if (p.server, p.point_id, p.launch) == ("candidate", point_id, 3)]
    assert not third.valid and not pooled.valid
    assert pooled.invalid_reasons == [f"launch 3: {reason}" for reason in third.invalid_reasons]
    assert all(p.valid for p in bench.points if (p.server, p.point_id) != ("candidate", point_id))


def test_aa_pair_launches_the_baseline_twice_and_labels_each_point(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(aa_pair=True, launch_sd=0.02))
    assert (run_dir.root / "bench" / "baseline" / "launch-2").is_dir()
    assert not (run_dir.root / "bench" / "candidate" / "launch-2").exists()
    bench = derive_summary(run_dir).bench
    # the candidate's one launch borrows the baseline's launch spread: one degree of freedom
    assert all(c.launches == [1, 2] and c.ci_df == 1 for c in bench.comparisons)
    decode = [c for c in bench.comparisons if c.metric == "decode_tok_s"]
    # the candidate is 25% faster, beyond an A/A margin of a few percent; one degree of freedom
    # (t = 12.7) leaves its CI too wide to call that at 95% on every point
    assert decode and all(c.label in {"faster", "within noise"} and c.ratio > 1.15 for c in decode)
    (margin,) = [a for a in bench.aa if a.metric == "decode_tok_s"]
    assert 0.01 <= margin.margin < 0.15


def test_a_screening_verdict_cannot_support_a_claim(tmp_path: Path) -> None:
    import pytest

    from byog.analysis.claims import check_claim
    from byog.core.errors import CheckFailed
    from byog.schemas.claims import VerdictClaim

    summary = derive_summary(make_run_dir(tmp_path / "run"))  # GSM8K, 20 greedy items: screening
    (verdict,) = summary.evals.verdicts
    assert verdict.screening
    # what the design decided stands as a claim; a pass ("equivalent") from a screening design does not
    assert check_claim(
        summary, VerdictClaim(kind="verdict", name="g", task="gsm8k", candidate="candidate", verdict=verdict.verdict)
    )
    summary.evals.verdicts[0] = verdict.model_copy(update={"verdict": "equivalent"})
    claim = VerdictClaim(kind="verdict", name="gsm8k", task="gsm8k", candidate="candidate", verdict="equivalent")
    with pytest.raises(CheckFailed, match="screening result"):
        check_claim(summary, claim)
