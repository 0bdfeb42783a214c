"""Operating-point strata: a deterministic, paired assignment and the per-stratum verdict."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from byog.analysis.eval_summary import summarize_evals
from byog.analysis.strata import SALT, measured_batch, operating_point, strata_record, stratum_problems
from byog.core.paths import RunDir
from byog.schemas.evals import write_eval_items
from byog.schemas.plan import Plan
from tests.support.synthetic import record_server_batch

IDS = [f"test:{i}" for i in range(400)]
KEYS = [(i, hashlib.sha256(i.encode()).hexdigest()) for i in IDS]


def test_each_item_has_one_stratum_from_its_identity_alone() -> None:
    points = [operating_point(i, s, [1, 64]) for i, s in KEYS]
    assert points == [operating_point(i, s, [64, 1]) for i, s in KEYS]  # the plan's order does not matter
    assert points == [operating_point(i, s, [1, 64]) for i, s in reversed(KEYS)][::-1]  # nor the items' order
    first = KEYS[0]
    digest = hashlib.sha256(f"{SALT}\0{first[0]}\0{first[1]}".encode()).digest()
    assert points[0] == [1, 64][int.from_bytes(digest[:8], "big") % 2]  # the recorded rule, by hand
    assert 170 < points.count(1) < 230  # a random half, binomial(400, 1/2)
    assert operating_point(first[0], "another sha", [1, 64]) in (1, 64)  # an edited item is hashed afresh
    assert {operating_point(i, s, [1, 8, 64]) for i, s in KEYS} == {1, 8, 64}


def _scores(at_64_wrong: int) -> tuple[list[float], list[float]]:
    """Identical servers, except the candidate is wrong on the first ``at_64_wrong`` items of stratum 64
    that the baseline gets right."""
    base = [100.0 if n % 2 else 0.0 for n in range(len(KEYS))]
    cand = list(base)
    flipped = 0
    for n, (i, s) in enumerate(KEYS):
        if flipped < at_64_wrong and base[n] == 100.0 and operating_point(i, s, [1, 64]) == 64:
            cand[n], flipped = 0.0, flipped + 1
    return cand, base


def test_a_difference_at_64_only_says_accuracy_depends_on_the_batch() -> None:
    cand, base = _scores(at_64_wrong=60)
    record = strata_record(KEYS, cand, base, [64, 1], margin=5.0, resolution=100.0)
    low, high = record.strata
    assert (low.operating_point, high.operating_point) == (1, 64)
    assert low.n + high.n == 400 and low.n == sum(operating_point(i, s, [1, 64]) == 1 for i, s in KEYS)
    assert (low.verdict, low.d) == ("equivalent", 0.0)
    assert high.verdict == "different" and high.d is not None and high.d == -6000.0 / high.n
    assert high.method == "tango-score"  # the overall gate's method for right-or-wrong items
    (contrast,) = record.contrasts
    assert (contrast.operating_point, contrast.reference) == (64, 1)
    assert contrast.delta == high.d and contrast.verdict == "different"
    assert contrast.ci95_high is not None and contrast.ci95_high < 0
    assert record.depends == "yes"


def test_identical_strata_say_no_and_a_small_sample_undetermined() -> None:
    cand, base = _scores(at_64_wrong=0)
    record = strata_record(KEYS, cand, base, [1, 64], margin=5.0, resolution=100.0)
    assert [s.verdict for s in record.strata] == ["equivalent", "equivalent"]
    assert record.contrasts[0].verdict == "equivalent" and record.depends == "no"
    few = strata_record(KEYS[:20], cand[:20], base[:20], [1, 64], margin=5.0, resolution=100.0)
    assert few.depends == "undetermined"


def _plan(points: str | None) -> Plan:
    evals = {"task": "gsm8k", "limit": 400, "margin": 5.0}
    if points:
        evals["operating_points"] = [int(p) for p in points.split(",")]
    return Plan(
        name="t",
        model={"path": "m"},
        servers={"candidate": {}, "baseline": {"args": ["--enforce-eager"]}},
        baseline="baseline",
        evals=[evals],
        seeds=[1],
    )


def _write(rd: RunDir, server: str, scores: list[float], ran_at: list[int | None]) -> None:
    rows = [
        {
            "item_id": i,
            "item_sha256": s,
            "pass_index": 0,
            "seed": 1,
            "extracted_answer": "1",
            "target": "1",
            "score": v / 100.0,
            "num_concurrent": b,
        }
        for (i, s), v, b in zip(KEYS, scores, ran_at, strict=True)
    ]
    write_eval_items(rd.eval_items(server, "gsm8k"), rows)
    rd.eval_results(server, "gsm8k").write_text("{}")


def _stratified(tmp_path: Path, at_64_wrong: int) -> RunDir:
    """Both servers' items, each row at its stratum's point (``_scores``), results.json without counts."""
    rd = RunDir(tmp_path)
    cand, base = _scores(at_64_wrong)
    at = [operating_point(i, s, [1, 64]) for i, s in KEYS]
    _write(rd, "candidate", cand, list(at))
    _write(rd, "baseline", base, list(at))
    return rd


def test_the_summary_judges_each_stratum_and_a_plan_without_points_is_unchanged(tmp_path: Path) -> None:
    rd = _stratified(tmp_path, at_64_wrong=60)
    (stratified,) = summarize_evals(rd, _plan("1,64")).verdicts
    (plain,) = summarize_evals(rd, _plan(None)).verdicts
    assert stratified.strata is not None and stratified.strata.depends == "yes"
    assert plain.strata is None
    assert stratified.model_dump(exclude={"strata"}) == plain.model_dump(exclude={"strata"})
    assert stratum_problems(rd, _plan("1,64")) == [] and stratum_problems(rd, _plan(None)) == []


def test_a_row_run_outside_its_stratum_is_a_problem(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    cand, base = _scores(at_64_wrong=0)
    at: list[int | None] = [operating_point(i, s, [1, 64]) for i, s in KEYS]
    _write(rd, "baseline", base, list(at))
    moved = [1 if a == 64 and n < 50 else a for n, a in enumerate(at)]
    _write(rd, "candidate", cand, moved)
    (problem,) = stratum_problems(rd, _plan("1,64"))
    wrong = sum(1 for a, b in zip(at, moved, strict=True) if a != b)
    assert problem.startswith(f"gsm8k on candidate: {wrong} of 400 rows ran outside their operating point's stratum")
    _write(rd, "candidate", cand, [None] * 400)  # an item schema 2 file records no concurrency
    assert stratum_problems(rd, _plan("1,64"))[0].startswith("gsm8k on candidate: 400 of 400 rows")


def test_the_planned_power_of_a_no_matches_the_monte_carlo() -> None:
    """benchmarks/results/eval-strata.md: no dependence, margin 5, right-or-wrong items with discordance q
    (sd of d_i = 100 sqrt(q)): "no" came out 8.8% (q 0.2, 1,000 items), 95.2% (0.2, 4,000), 58.5% (0.4, 4,000)."""
    from byog.analysis.strata import planned_no_power

    for q, n, simulated in ((0.2, 1000, 0.088), (0.2, 4000, 0.952), (0.4, 4000, 0.585), (0.05, 1000, 0.940)):
        assert abs(planned_no_power(100 * q**0.5, n, 2, 5.0) - simulated) < 0.03
    assert planned_no_power(44.7, 4000, 3, 5.0) < planned_no_power(44.7, 4000, 2, 5.0)  # thinner strata, 2 contrasts
    assert planned_no_power(44.7, 3, 2, 5.0) == 0.0


def test_the_servers_counters_over_a_stratum() -> None:
    from byog.analysis.strata import server_batch

    def metrics(tokens: float, steps: float) -> str:
        return (
            "# TYPE vllm:generation_tokens_total counter\n"
            f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {tokens}\n'
            f'vllm:iteration_tokens_total_count{{engine="0",model_name="m"}} {steps}\n'
        )

    assert server_batch(metrics(100.0, 40.0), metrics(6500.0, 140.0)) == {
        "output_tokens": 6400.0,
        "engine_steps": 100.0,
        "tokens_per_step": 64.0,
    }
    assert server_batch(None, metrics(1.0, 1.0)) is None  # no /metrics before: nothing said
    assert server_batch("other 1\n", "other 2\n") is None  # counters not exported
    assert server_batch(metrics(5.0, 7.0), metrics(5.0, 7.0)) == {
        "output_tokens": 0.0,
        "engine_steps": 0.0,
        "tokens_per_step": None,
    }


def test_the_summary_carries_each_servers_measured_batch_per_stratum(tmp_path: Path) -> None:
    rd = _stratified(tmp_path, at_64_wrong=0)
    (older,) = summarize_evals(rd, _plan("1,64")).verdicts  # results.json from before the counts were kept
    assert older.strata is not None
    assert [(s.candidate_tokens_per_step, s.baseline_tokens_per_step) for s in older.strata.strata] == [
        (None, None)
    ] * 2
    record_server_batch(rd, "candidate", "gsm8k", {1: (1123.0, 1123.0), 64: (910.0, 28.0)})
    record_server_batch(rd, "baseline", "gsm8k", {1: (1114.0, 1114.0), 64: None})  # no /metrics at 64
    (verdict,) = summarize_evals(rd, _plan("1,64")).verdicts
    assert verdict.strata is not None
    assert [
        (s.operating_point, s.candidate_tokens_per_step, s.baseline_tokens_per_step) for s in verdict.strata.strata
    ] == [
        (1, 1.0, 1.0),
        (64, 32.5, None),
    ]
    assert verdict.model_dump(exclude={"strata"}) == older.model_dump(exclude={"strata"})


def test_the_measured_batch_is_recomputed_from_the_recorded_counts_and_junk_is_unknown(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert measured_batch(rd, "candidate", "gsm8k") == {}  # no results.json
    rd.eval_results("candidate", "gsm8k").parent.mkdir(parents=True)
    record_server_batch(rd, "candidate", "gsm8k", {1: (40.0, 40.0), 8: (0.0, 0.0), 64: (6400.0, 100.0)})
    assert measured_batch(rd, "candidate", "gsm8k") == {1: 1.0, 64: 64.0}  # no engine step at 8: unknown
    junk = {
        "64": {"output_tokens": 6400.0, "engine_steps": 100.0, "tokens_per_step": 3.0},  # the counts decide
        "1": {"output_tokens": True, "engine_steps": 1},
        "2": {"output_tokens": float("nan"), "engine_steps": 1},
        "4": {"output_tokens": -5.0, "engine_steps": 1},
        "８": {"output_tokens": 8.0, "engine_steps": 1},
        "16": "many",
        "32": {"output_tokens": "1e3", "engine_steps": 1},
        "128": {"output_tokens": 1e300, "engine_steps": 1e-300},  # overflows: summary floats are finite
    }
    rd.eval_results("candidate", "gsm8k").write_text(json.dumps({"extra": {"strata": {"server_batch": junk}}}))
    assert measured_batch(rd, "candidate", "gsm8k") == {64: 64.0}
    for document in ("[]", '{"extra": {"strata": {"server_batch": [1]}}}', "{not json", '{"extra": null}'):
        rd.eval_results("candidate", "gsm8k").write_text(document)
        assert measured_batch(rd, "candidate", "gsm8k") == {}
