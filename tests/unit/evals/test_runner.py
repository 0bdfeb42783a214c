"""summarize_evals from raw files, and the gated-text rule on what the adapter writes."""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from byog.analysis import group_sequential, stats
from byog.analysis.eval_summary import summarize_evals
from byog.core.errors import UsageError
from byog.core.paths import RunDir
from byog.evals import runner
from byog.evals.data import FIXTURES_DIR, read_split, resolve_source
from byog.evals.lm_eval_adapter import PassItem, item_identity, items_from_samples
from byog.evals.runner import TaskRun, write_task
from byog.plans.tasks import EvalContextUnknown, EvalDoesNotFit, get_task
from byog.schemas.plan import Plan
from byog.schemas.server import Endpoint
from tests.support.gated import find_texts, gpqa_fixture_texts
from tests.support.reporter import RecordingReporter


def _plan(spec_candidate: bool = False) -> Plan:
    return Plan(
        name="t",
        model={"path": "m"},
        servers={
            "candidate": {"speculative_config": {"method": "ngram"}} if spec_candidate else {},
            "baseline": {"args": ["--enforce-eager"]},
        },
        baseline="baseline",
        evals=[{"task": "gsm8k", "passes": 2, "margin": 3.0}],
        seeds=[1, 2],
    )


def _rows(scores_by_pass: list[list[float]], ids: list[str]) -> list[dict]:
    return [
        {
            "item_id": i,
            "item_sha256": f"sha-{i}",
            "pass_index": k,
            "seed": k + 1,
            "extracted_answer": "1",
            "target": "1",
            "score": s,
            "n_output_tokens": None,
            "bin": None,
        }
        for k, scores in enumerate(scores_by_pass)
        for i, s in zip(ids, scores, strict=True)
    ]


def _write(run_dir: RunDir, server: str, rows: list[dict]) -> None:
    write_task(run_dir, server, "gsm8k", TaskRun(rows=rows, results={"server": server, "task": {"name": "gsm8k"}}))


def test_scores_and_verdict_from_raw_items(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    ids = ["a", "b", "c", "d"]
    _write(run_dir, "baseline", _rows([[1, 0, 1, 1], [1, 0, 0, 1]], ids))  # item means 100, 0, 50, 100
    _write(run_dir, "candidate", _rows([[1, 1, 1, 1], [1, 0, 1, 1]], ids))  # 100, 50, 100, 100
    out = summarize_evals(run_dir, _plan()).model_dump(mode="json")
    scores = {s["server"]: s for s in out["scores"]}
    assert scores["baseline"]["score"] == pytest.approx(62.5) and scores["baseline"]["passes"] == 2
    assert scores["baseline"]["stderr"] == pytest.approx(stats.standard_error([100, 0, 50, 100]))
    assert scores["candidate"]["score"] == pytest.approx(87.5) and scores["candidate"]["n_items"] == 4
    (verdict,) = out["verdicts"]
    expected = stats.paired_comparison([100, 50, 100, 100], [100, 0, 50, 100], 3.0)
    assert verdict["d"] == pytest.approx(25.0) and verdict["se_d"] == pytest.approx(expected.se_d)
    assert verdict["verdict"] == expected.verdict == "inconclusive"
    assert (verdict["candidate"], verdict["baseline"], verdict["speculative"], verdict["n"]) == (
        "candidate",
        "baseline",
        False,
        4,
    )
    # deterministic and strict JSON (no NaN)
    assert json.dumps(out, sort_keys=True, allow_nan=False) == json.dumps(
        summarize_evals(run_dir, _plan()).model_dump(mode="json"), sort_keys=True, allow_nan=False
    )


def test_items_pair_by_id_and_hash_and_speculative_comes_from_the_candidate(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    _write(run_dir, "baseline", _rows([[1, 1, 1]], ["a", "b", "c"]))
    cand = _rows([[1, 1, 1]], ["a", "b", "c"])
    cand[2]["item_sha256"] = "changed"  # a different item under the same id is never paired
    _write(run_dir, "candidate", cand)
    (verdict,) = summarize_evals(run_dir, _plan(spec_candidate=True)).model_dump(mode="json")["verdicts"]
    assert verdict["n"] == 2 and verdict["speculative"] is True
    # two identical items: d = 0, SE floored at 100 / 2 (one pass), far from proving equivalence
    assert verdict["d"] == 0.0 and verdict["se_d"] == pytest.approx(50.0)
    # ... and named: both at 100, and no item differs at n = 2
    assert verdict["verdict"] == "degenerate" and verdict["degenerate"] == ["ceiling", "no_discordant"]


def test_one_item_gives_nulls_not_nan(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    _write(run_dir, "baseline", _rows([[1]], ["a"]))
    _write(run_dir, "candidate", _rows([[0]], ["a"]))
    out = summarize_evals(run_dir, _plan()).model_dump(mode="json")
    assert out["scores"][0]["stderr"] is None
    assert out["verdicts"][0]["se_d"] is None and out["verdicts"][0]["verdict"] == "inconclusive"
    json.dumps(out, allow_nan=False)


def test_gpqa_items_keep_no_text(tmp_path: Path) -> None:
    """lm-eval's samples carry the question (doc, arguments) and responses quoting it: none of it is kept."""
    task = get_task("gpqa_diamond")
    with (FIXTURES_DIR / "gpqa_diamond.FIXTURE.csv").open(encoding="utf-8", newline="") as handle:
        file_rows = list(csv.DictReader(handle))
    samples = []
    for i, row in enumerate(file_rows):
        doc = {**row, "choices": [row["Correct Answer"]] * 4, "answer": "(A)"}
        for filt, resp in (
            ("strict-match", row["Question"]),
            ("flexible-extract", "(A)" if i % 2 else row["Correct Answer"]),
        ):
            samples.append(
                {
                    "doc_id": i,
                    "doc": doc,
                    "target": "(A)",
                    "arguments": [[row["Question"]]],
                    "resps": [[row["Question"] + " so the answer is " + row["Correct Answer"]]],
                    "filtered_resps": [resp],
                    "filter": filt,
                    "exact_match": float(i % 2),
                }
            )
    items = items_from_samples(task, samples, file_rows)
    assert [it.item_id for it in items] == [r["Record ID"] for r in file_rows]
    assert {it.extracted_answer for it in items} == {"(A)", "[unparsed]"}
    rows = [
        {
            "item_id": it.item_id,
            "item_sha256": it.item_sha256,
            "pass_index": 0,
            "seed": 1,
            "extracted_answer": it.extracted_answer,
            "target": it.target,
            "score": it.score,
            "n_output_tokens": None,
            "bin": None,
        }
        for it in items
    ]
    run_dir = RunDir(tmp_path)
    write_task(run_dir, "candidate", task.name, TaskRun(rows=rows, results={"task": task.record()}))
    assert len([p for p in tmp_path.rglob("*") if p.is_file()]) == 2
    assert find_texts(tmp_path, gpqa_fixture_texts()) == []


def test_the_scan_finds_leaked_text(tmp_path: Path) -> None:
    texts = gpqa_fixture_texts()
    assert len(texts) >= 10 and any("Zorblax" in t for t in texts)
    (tmp_path / "report.md").write_text("oops: " + texts[0], encoding="utf-8")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"x": texts[1]}]), tmp_path / "items.parquet", compression="zstd")
    assert find_texts(tmp_path, texts) == [("items.parquet", texts[1]), ("report.md", texts[0])]


def _plan_for(limit: int | None, **spec: object) -> Plan:
    return Plan(
        name="t",
        model={"path": "m"},
        servers={"candidate": {}, "baseline": {}},
        baseline="baseline",
        evals=[{"task": "gsm8k", "passes": 1, **({"limit": limit} if limit else {}), **spec}],
    )


def test_gsm8k_at_zero_on_both_servers_is_degenerate_and_screening_at_100_items(tmp_path: Path) -> None:
    """The H200 run with dummy weights: GSM8K 0/100 on both servers, which the gate alone calls equivalent."""
    run_dir = RunDir(tmp_path)
    ids = [f"q{i}" for i in range(100)]
    _write(run_dir, "baseline", _rows([[0] * 100], ids))
    _write(run_dir, "candidate", _rows([[0] * 100], ids))
    (verdict,) = summarize_evals(run_dir, _plan_for(100)).verdicts
    assert stats.paired_comparison([0.0] * 100, [0.0] * 100, 3.0).verdict == "equivalent"
    assert verdict.verdict == "degenerate" and verdict.degenerate == ["floor"] and verdict.discordant == 0
    assert "solves nothing" in verdict.degenerate_why[0]
    # 100 greedy items at a 3-point margin cannot keep the gate sound: the plan said so before the run
    assert verdict.screening is True and verdict.planned_false_fail > 0.3
    assert verdict.observed_redraw is None  # no item can disagree at the floor: the rate is not measured


def test_sound_design_is_not_screening_and_a_reference_floor_names_a_weak_baseline(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    ids = [f"q{i}" for i in range(600)]
    base = [1 if i % 3 else 0 for i in range(600)]  # 66.7 points
    cand = list(base)
    cand[0], cand[1] = 1, 0  # two discordant items
    _write(run_dir, "baseline", _rows([base], ids))
    _write(run_dir, "candidate", _rows([cand], ids))
    (sound,) = summarize_evals(run_dir, _plan_for(None)).verdicts  # all 1,319 items planned
    assert sound.screening is False and sound.planned_false_fail < 0.01
    assert sound.verdict == "equivalent" and sound.degenerate == [] and sound.discordant == 2
    (weak,) = summarize_evals(run_dir, _plan_for(None, min_baseline_score=75.0)).verdicts
    assert weak.verdict == "degenerate" and weak.degenerate == ["below_reference"]


def test_a_greedy_verdict_is_judged_at_the_discordance_it_observed(tmp_path: Path) -> None:
    """440 greedy GSM8K items at 75%, 40 of them answered differently (20 each way): the gate says
    equivalent, but that discordance implies a re-draw rate far above the planned 10%, at which this
    design fails identical servers most of the time: screening, with the n that would be sound."""
    run_dir = RunDir(tmp_path)
    ids = [f"q{i}" for i in range(440)]
    base = [1 if i % 4 else 0 for i in range(440)]
    cand = list(base)
    flipped = [i for i in range(440) if base[i] == 0][:20] + [i for i in range(440) if base[i] == 1][:20]
    for i in flipped:
        cand[i] = 1 - cand[i]
    _write(run_dir, "baseline", _rows([base], ids))
    _write(run_dir, "candidate", _rows([cand], ids))
    (verdict,) = summarize_evals(run_dir, _plan_for(440)).verdicts
    assert verdict.verdict == "equivalent" and verdict.planned_false_fail < 0.05  # sound as planned
    assert verdict.discordant == 40 and verdict.observed_discordance == pytest.approx(40 / 440)
    assert verdict.planned_redraw == pytest.approx(0.10)
    assert 0.4 < verdict.observed_redraw < 0.6  # (40 + 1) / 442 over 2 E[p (1 - p)] = 0.1875
    assert verdict.observed_sound is False and verdict.observed_false_fail > 0.5
    assert verdict.screening is True
    assert verdict.screening_label == f"screening (observed re-draw {verdict.observed_redraw:.0%} > planned 10%)"
    assert verdict.sound_n is not None and verdict.sound_n > 440 and verdict.sound_n % 10 == 0
    assert verdict.within_1se is True  # d = 0: the looser rule agrees

    quiet = RunDir(tmp_path / "quiet")  # the same design, 2 items differ: sound at its observed rate too
    cand = list(base)
    cand[flipped[0]], cand[flipped[-1]] = 1 - cand[flipped[0]], 1 - cand[flipped[-1]]
    _write(quiet, "baseline", _rows([base], ids))
    _write(quiet, "candidate", _rows([cand], ids))
    (calm,) = summarize_evals(quiet, _plan_for(440)).verdicts
    assert calm.observed_sound is True and calm.screening is False and calm.screening_label is None
    assert calm.observed_redraw < 0.10 and calm.sound_n is not None and calm.sound_n <= 440


def test_eval_requests_are_sized_by_the_task_and_the_server_record_is_read(tmp_path: Path) -> None:
    from byog.core.io import atomic_write_json
    from byog.evals.runner import recorded_server_info, tokens_per_request

    assert tokens_per_request(get_task("gsm8k"), 4096, {}) == 1024 + 256
    assert tokens_per_request(get_task("gsm8k"), 4096, {"max_gen_toks": 2048}) == 1024 + 2048
    assert tokens_per_request(get_task("mrcr_generated"), 4096, {}) == 4096
    rd = RunDir(tmp_path)
    assert recorded_server_info(rd, "candidate") is None
    atomic_write_json(rd.server_record("candidate"), {"resolved": {"server_info": {"vllm_config": {"x": 1}}}})
    assert recorded_server_info(rd, "candidate") == {"vllm_config": {"x": 1}}
    atomic_write_json(rd.server_record("baseline"), {"resolved": None})
    assert recorded_server_info(rd, "baseline") is None


# --- stopping early: the later server of a pair runs in look-sized chunks -----------------------


def _looks_plan() -> Plan:
    return Plan(
        name="t",
        model={"path": "m"},
        servers={"candidate": {}, "baseline": {"args": ["--enforce-eager"]}},
        baseline="baseline",
        # 7 points: 100 identical right-or-wrong items prove equivalence at look 1 (Tango's
        # sqrt(100 M / (1 - M)) reaches the OBF boundary 2.54 from M = 6.1 points)
        evals=[
            {"task": "arithmetic_generated", "limit": 200, "passes": 1, "margin": 7.0, "looks": [0.5, 1.0]},
        ],
        seeds=[1],
    )


class FakeLmEval:
    """lm-eval's per-item outcomes without a server: score by doc index; records the docs each pass ran."""

    def __init__(self, score: Callable[[int], float]) -> None:
        self.score = score
        self.calls: list[list[int]] = []
        self.in_flight: list[int] = []  # num_concurrent of each call

    def __call__(self, task: Any, source: Any, endpoint: Any, **kw: Any) -> tuple[list[PassItem], dict[str, Any]]:
        rows = read_split(source, task.eval_split)
        docs = sorted(kw["samples"]) if kw.get("samples") is not None else list(range(kw["limit"]))
        self.calls.append(docs)
        self.in_flight.append(kw["num_concurrent"])
        items = [PassItem(d, *item_identity(task, d, rows, {}), "1", "1", self.score(d)) for d in docs]
        return items, {"name": "fake lm-eval"}


def _run_server(
    rd: RunDir, server: str, score: Callable[[int], float], monkeypatch: pytest.MonkeyPatch
) -> tuple[FakeLmEval, RecordingReporter]:
    fake = FakeLmEval(score)
    monkeypatch.setattr(runner, "run_pass", fake)
    reporter = RecordingReporter()
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=4096)
    runner.run_evals_for_server(_looks_plan(), server, endpoint, rd, None, reporter)
    return fake, reporter


def _mixed(d: int) -> float:
    return float(d % 3 != 0)


def test_the_later_server_stops_at_the_look_where_the_gate_stops(tmp_path: Path, monkeypatch) -> None:
    rd = RunDir(tmp_path)
    first, _ = _run_server(rd, "baseline", _mixed, monkeypatch)
    assert first.calls == [list(range(200))]  # nothing to pair with yet: every item, in one pass
    later, reporter = _run_server(rd, "candidate", _mixed, monkeypatch)
    assert len(later.calls) == 1 and len(later.calls[0]) == 100  # look 1 of 2 stopped: half the items
    task = get_task("arithmetic_generated")
    rows = read_split(resolve_source(task, None), "test")
    first_half = sorted((item_identity(task, d, rows, {}) for d in range(200)), key=group_sequential.item_order)
    assert {item_identity(task, d, rows, {}) for d in later.calls[0]} == set(first_half[:100])
    assert later.calls[0] != list(range(100))  # the looks read items in id order, not the file's
    results = json.loads(rd.eval_results("candidate", task.name).read_text())
    assert results["n_items"] == 100
    assert results["extra"]["sequential"] == {"planned_items": 200, "looks_run": 1, "items_run": 100, "stopped": True}
    assert "stopped at look 1: items run / planned 100 / 200" in "\n".join(reporter.lines)
    verdict = summarize_evals(rd, _looks_plan()).verdicts[0]
    assert verdict.sequential is not None
    assert (verdict.sequential.decision, verdict.sequential.items_used, verdict.sequential.items_planned) == (
        "equivalent",
        100,
        200,
    )
    assert not group_sequential.missing_items(verdict.sequential)


def test_a_gate_that_does_not_stop_runs_every_look(tmp_path: Path, monkeypatch) -> None:
    rd = RunDir(tmp_path)
    _run_server(rd, "baseline", _mixed, monkeypatch)
    later, reporter = _run_server(rd, "candidate", lambda d: _mixed(d) if d % 10 else 1 - _mixed(d), monkeypatch)
    assert [len(c) for c in later.calls] == [100, 100]
    assert sorted(d for c in later.calls for d in c) == list(range(200))
    assert "no look stopped: items run / planned 200 / 200" in "\n".join(reporter.lines)
    verdict = summarize_evals(rd, _looks_plan()).verdicts[0]
    assert verdict.sequential is not None and verdict.sequential.decision == "inconclusive"
    assert [look.items for look in verdict.sequential.looks] == [100, 200]


def test_a_different_pair_stops_for_difference_and_the_order_of_servers_does_not_matter(
    tmp_path: Path, monkeypatch
) -> None:
    rd = RunDir(tmp_path)
    _run_server(rd, "candidate", lambda d: 0.0 if d % 2 else _mixed(d), monkeypatch)  # the candidate first
    later, _ = _run_server(rd, "baseline", _mixed, monkeypatch)
    assert [len(c) for c in later.calls] == [100]
    verdict = summarize_evals(rd, _looks_plan()).verdicts[0]
    assert verdict.sequential is not None and verdict.sequential.decision == "different"


def test_looks_need_the_items_to_exist(tmp_path: Path) -> None:
    task = get_task("arithmetic_generated")
    with pytest.raises(UsageError, match="arithmetic_generated has 200 items, fewer than the plan's limit 300"):
        runner.look_order(task, resolve_source(task, None), 300)


def test_an_eval_with_looks_that_runs_short_of_its_limit_is_refused_before_its_records_are_written(
    tmp_path: Path, monkeypatch
) -> None:
    rd = RunDir(tmp_path)
    plan = _looks_plan()
    fake = FakeLmEval(_mixed)
    monkeypatch.setattr(runner, "run_pass", lambda *a, **kw: (fake(*a, **kw)[0][:150], {}))
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=4096)
    with pytest.raises(UsageError, match="ran 150 items on baseline, fewer than the plan's limit 200"):
        runner.run_evals_for_server(plan, "baseline", endpoint, rd, None, RecordingReporter())
    assert not rd.eval_items("baseline", "arithmetic_generated").exists()


def test_without_local_data_files_the_later_server_runs_every_item_and_says_why(tmp_path: Path, monkeypatch) -> None:
    rd = RunDir(tmp_path)
    _run_server(rd, "baseline", _mixed, monkeypatch)
    task = get_task("arithmetic_generated")
    source = resolve_source(task, None)
    monkeypatch.setattr(runner, "resolve_source", lambda *_: replace(source, kind="hub", files={}))
    fake = FakeLmEval(_mixed)
    monkeypatch.setattr(runner, "run_pass", lambda t, s, e, **kw: fake(t, source, e, **kw))
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=4096)
    runner.run_evals_for_server(_looks_plan(), "candidate", endpoint, rd, None, RecordingReporter())
    assert fake.calls == [list(range(200))]
    record = json.loads(rd.eval_results("candidate", task.name).read_text())["extra"]["sequential"]
    assert record["stopped"] is False and record["why"].startswith("every item ran: no local data files")


# --- operating points: each stratum at its own num_concurrent ------------------------------------


def _points_plan(points: list[int] | None) -> Plan:
    spec: dict[str, Any] = {"task": "arithmetic_generated", "limit": 200, "passes": 2, "margin": 7.0}
    if points is not None:
        spec["operating_points"] = points
    return Plan(
        name="t",
        model={"path": "m"},
        servers={"candidate": {}, "baseline": {"args": ["--enforce-eager"]}},
        baseline="baseline",
        evals=[spec],
        seeds=[1, 2],
    )


def _run_points(
    rd: RunDir, server: str, plan: Plan, monkeypatch: pytest.MonkeyPatch
) -> tuple[FakeLmEval, RecordingReporter]:
    fake = FakeLmEval(_mixed)
    monkeypatch.setattr(runner, "run_pass", fake)
    reporter = RecordingReporter()
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=4096)
    runner.run_evals_for_server(plan, server, endpoint, rd, None, reporter)
    return fake, reporter


def test_each_operating_point_reaches_lm_eval_as_num_concurrent_on_the_same_items_of_both_servers(
    tmp_path: Path, monkeypatch
) -> None:
    from byog.analysis.strata import operating_point
    from byog.schemas.tables import read_columns

    rd = RunDir(tmp_path)
    plan = _points_plan([64, 1])
    base, _ = _run_points(rd, "baseline", plan, monkeypatch)
    cand, reporter = _run_points(rd, "candidate", plan, monkeypatch)
    assert base.in_flight == cand.in_flight == [1, 1, 64, 64]  # each stratum, every pass, at its point
    assert base.calls == cand.calls  # paired: the same docs in the same strata
    task = get_task("arithmetic_generated")
    rows = read_split(resolve_source(task, None), "test")
    low, high = base.calls[0], base.calls[2]
    assert sorted(low + high) == list(range(200)) and 50 < len(low) < 150
    assert all(operating_point(*item_identity(task, d, rows, {}), [1, 64]) == 1 for d in low)
    cols = read_columns(rd.eval_items("candidate", task.name), ["item_id", "item_sha256", "num_concurrent"])
    assert len(cols["item_id"]) == 400
    assert all(
        b == operating_point(i, s, [1, 64])
        for i, s, b in zip(cols["item_id"], cols["item_sha256"], cols["num_concurrent"], strict=True)
    )
    extra = json.loads(rd.eval_results("candidate", task.name).read_text())["extra"]
    assert extra["strata"]["points"] == [1, 64] and extra["strata"]["items"] == {"1": len(low), "64": len(high)}
    assert "the server's batch was at most that many of them" in extra["strata"]["note"]
    assert extra["strata"]["server_batch"] == {"1": None, "64": None}  # the fake lm-eval's endpoint serves no /metrics
    assert extra["concurrency"]["source"] == "operating points"
    assert f"at operating points 1/64 in flight ({len(low)}/{len(high)} items)" in "\n".join(reporter.lines)
    verdict = summarize_evals(rd, plan).verdicts[0]
    assert verdict.strata is not None and [s.n for s in verdict.strata.strata] == [len(low), len(high)]


def test_without_operating_points_every_item_runs_at_the_one_concurrency(tmp_path: Path, monkeypatch) -> None:
    from byog.schemas.tables import read_columns

    rd = RunDir(tmp_path)
    fake, reporter = _run_points(rd, "baseline", _points_plan(None), monkeypatch)
    assert fake.calls == [list(range(200))] * 2 and fake.in_flight == [8, 8]  # no server_info: the old 8
    cols = read_columns(rd.eval_items("baseline", "arithmetic_generated"), ["num_concurrent"])
    assert set(cols["num_concurrent"]) == {8}
    extra = json.loads(rd.eval_results("baseline", "arithmetic_generated").read_text())["extra"]
    assert "strata" not in extra and extra["concurrency"]["source"] == "unknown capacity"
    assert "at concurrency 8 (unknown capacity)" in "\n".join(reporter.lines)


def test_operating_points_need_local_data_and_lm_eval(tmp_path: Path, monkeypatch) -> None:
    task = get_task("arithmetic_generated")
    source = resolve_source(task, None)
    monkeypatch.setattr(runner, "resolve_source", lambda *_: replace(source, kind="hub", files={}))
    with pytest.raises(UsageError, match="operating points need the items' ids before they run"):
        _run_points(RunDir(tmp_path), "baseline", _points_plan([1, 64]), monkeypatch)
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=4096)
    with pytest.raises(UsageError, match="operating points are run through lm-eval"):
        runner.run_task(
            get_task("mrcr_generated"), "b", endpoint, seeds=[1], limit=2, data_dir=None, operating_points=[1, 64]
        )


def test_the_plan_refuses_operating_points_it_cannot_run() -> None:
    from pydantic import ValidationError

    for bad, said in (
        ([1, 1], "distinct"),
        ([1], "at least 2"),
        ([1, 2, 4, 8, 16], "at most 4"),
        ([0, 64], "greater than 0"),
    ):
        with pytest.raises(ValidationError, match=said):
            _points_plan(bad)
    with pytest.raises(ValidationError, match="operating_points and looks cannot be combined"):
        both = {"task": "gsm8k", "operating_points": [1, 64], "looks": [1.0]}
        Plan.model_validate({**_points_plan([1, 64]).model_dump(), "evals": [both]})


class _InFlight:
    """A loopback OpenAI chat endpoint that answers "4" after a short wait and records, per request in
    arrival order, how many requests were in flight when it arrived (itself included). Its /metrics
    counts one output token and one engine step per answer (vLLM's counter names)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.lock = threading.Lock()
        self.now = 0
        self.seen: list[int] = []
        self.done = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = (
                    f'vllm:generation_tokens_total{{engine="0"}} {outer.done}.0\n'
                    f'vllm:iteration_tokens_total_count{{engine="0"}} {outer.done}.0\n'
                )
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def do_POST(self) -> None:
                import time

                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer.lock:
                    outer.now += 1
                    outer.seen.append(outer.now)
                time.sleep(0.05)  # long enough for the client's next requests to arrive meanwhile
                body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}}]})
                with outer.lock:
                    outer.now -= 1
                    outer.done += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_real_lm_eval_keeps_each_strata_requests_in_flight_at_its_point(tmp_path: Path) -> None:
    """No fake of lm-eval: its local-chat-completions client against a loopback endpoint that counts the
    requests in flight. Stratum 1's requests arrive alone; stratum 4's overlap, never more than 4."""
    server = _InFlight()
    try:
        endpoint = Endpoint(base_url=server.url, model="m", max_model_len=2048)
        task = get_task("arithmetic_generated")
        run = runner.run_task(
            task, "b", endpoint, seeds=[1], limit=24, data_dir=None, operating_points=[4, 1], server_info=None
        )
    finally:
        server.close()
    low, high = run.results["extra"]["strata"]["items"]["1"], run.results["extra"]["strata"]["items"]["4"]
    assert low + high == 24 and len(server.seen) == 24
    assert server.seen[:low] == [1] * low  # the smaller point's stratum runs first, one request at a time
    assert max(server.seen[low:]) <= 4 and max(server.seen[low:]) > 1
    assert {r["num_concurrent"] for r in run.rows} == {1, 4}
    assert {r["extracted_answer"] for r in run.rows} == {"4"}
    batch = run.results["extra"]["strata"]["server_batch"]  # the server's counters over each stratum alone
    assert batch["1"] == {"output_tokens": float(low), "engine_steps": float(low), "tokens_per_step": 1.0}
    assert batch["4"] == {"output_tokens": float(high), "engine_steps": float(high), "tokens_per_step": 1.0}
    said = runner.concurrency_said(run.results["extra"])
    assert said == f"operating points 1/4 in flight ({low}/{high} items; server: 1.0/1.0 output tokens per engine step)"


# --- an eval the server's context cannot hold: refused before any of its requests ----------------


def _fit_plan(*evals: dict[str, Any]) -> Plan:
    return Plan(
        name="t",
        model={"path": "m"},
        servers={"candidate": {}, "baseline": {"args": ["--enforce-eager"]}},
        baseline="baseline",
        evals=list(evals),
        seeds=[1],
    )


def test_a_task_whose_answers_the_context_cannot_hold_is_refused_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """byog's arithmetic reserves 64 tokens for its prompts; a plan's 64-token answers need 128. At a
    context of 100 learned from the server, the answers would have been cut to 36 tokens."""
    fake = FakeLmEval(_mixed)
    monkeypatch.setattr(runner, "run_pass", fake)
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=100)
    run = functools.partial(
        runner.run_task, get_task("arithmetic_generated"), "candidate", endpoint, seeds=[1], limit=4, data_dir=None
    )
    with pytest.raises(EvalDoesNotFit, match=r"in up to 64, but server 'candidate' holds at most max_model_len = 100"):
        run(gen_overrides={"max_gen_toks": 64})
    with pytest.raises(EvalDoesNotFit, match="raise it to at least 128"):  # operating points: the same rule
        run(gen_overrides={"max_gen_toks": 64}, operating_points=[1, 4])
    assert fake.calls == []
    assert run().results["sampling"]["max_gen_toks"] == 16 and len(fake.calls) == 1  # the task's own 16 fit
    # the record says the answer length the requests asked for: lm-eval sends max_tokens over max_gen_toks
    assert run(gen_overrides={"max_tokens": 24}).results["sampling"]["max_gen_toks"] == 24


def test_a_server_runs_none_of_its_evals_while_one_cannot_fit_and_a_complete_one_is_not_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rd = RunDir(tmp_path)
    fake = FakeLmEval(_mixed)
    monkeypatch.setattr(runner, "run_pass", fake)
    plan = _fit_plan(
        {"task": "arithmetic_generated", "limit": 4, "passes": 1, "servers": ["baseline"]},
        {"task": "arithmetic_generated", "limit": 4, "passes": 1, "servers": ["candidate"]},
        {"task": "gsm8k", "limit": 4, "passes": 1, "servers": ["candidate"]},
        {"task": "mrcr_generated", "limit": 1, "passes": 1},  # sizes its items itself: never refused
    )
    small = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=1100)
    monkeypatch.setattr(runner, "_mrcr_task", lambda *a, **kw: pytest.fail("MRCR ran"))
    runner.check_evals_fit(plan, "baseline", small, rd)
    with pytest.raises(EvalDoesNotFit, match="eval 'gsm8k' .* server 'candidate' holds at most max_model_len = 1100"):
        runner.run_evals_for_server(plan, "candidate", small, rd, None, RecordingReporter())
    assert fake.calls == [] and not rd.eval_complete("candidate", "arithmetic_generated")
    # a task already complete is not checked again: its records stand, the rest resumes
    write_task(rd, "candidate", "gsm8k", TaskRun(rows=[], results={}))
    runner.check_evals_fit(plan, "candidate", small, rd)


def test_no_eval_runs_on_a_server_that_does_not_say_its_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An lm-eval task and MRCR alike: refused before any request (MRCR would have sized its items to a
    guessed context), the run's own tasks and a plan's; once the server says it, they run."""
    rd = RunDir(tmp_path)
    fake = FakeLmEval(_mixed)
    monkeypatch.setattr(runner, "run_pass", fake)
    monkeypatch.setattr(runner, "_mrcr_task", lambda *a, **kw: pytest.fail("MRCR ran"))
    silent = Endpoint(base_url="http://127.0.0.1:1", model="m")
    for name in ("arithmetic_generated", "mrcr_generated"):
        with pytest.raises(EvalContextUnknown, match=f"^eval '{name}' .* server 'candidate' does not say its context"):
            runner.run_task(get_task(name), "candidate", silent, seeds=[1], limit=4, data_dir=None)
    plan = _fit_plan({"task": "mrcr_generated", "limit": 1, "passes": 1, "servers": ["candidate"]})
    with pytest.raises(EvalContextUnknown, match="^eval 'mrcr_generated' sizes its items"):
        runner.run_evals_for_server(plan, "candidate", silent, rd, None, RecordingReporter())
    assert fake.calls == [] and not rd.eval_complete("candidate", "mrcr_generated")
    said = replace(silent, max_model_len=1100)
    runner.check_evals_fit(plan, "candidate", said, rd)
    assert runner.run_task(get_task("arithmetic_generated"), "candidate", said, seeds=[1], limit=4, data_dir=None).rows
