"""summarize_evals from raw files, and the gated-text rule on what the adapter writes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from byog.bundles.rundir import RunDir
from byog.evals import stats
from byog.evals.data import FIXTURES_DIR
from byog.evals.gated import find_texts, gpqa_fixture_texts
from byog.evals.lm_eval_adapter import items_from_samples
from byog.evals.runner import TaskRun, write_task
from byog.evals.summary import summarize_evals
from byog.evals.tasks import get_task
from byog.plans.model import Plan


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
        {"item_id": i, "item_sha256": f"sha-{i}", "pass_index": k, "seed": k + 1, "extracted_answer": "1",
         "target": "1", "score": s, "n_output_tokens": None, "bin": None}
        for k, scores in enumerate(scores_by_pass) for i, s in zip(ids, scores)
    ]


def _write(run_dir: RunDir, server: str, rows: list[dict]) -> None:
    write_task(run_dir, server, "gsm8k", TaskRun(rows=rows, results={"server": server, "task": {"name": "gsm8k"}}))


def test_scores_and_verdict_from_raw_items(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    ids = ["a", "b", "c", "d"]
    _write(run_dir, "baseline", _rows([[1, 0, 1, 1], [1, 0, 0, 1]], ids))  # item means 100, 0, 50, 100
    _write(run_dir, "candidate", _rows([[1, 1, 1, 1], [1, 0, 1, 1]], ids))  # 100, 50, 100, 100
    out = summarize_evals(run_dir, _plan())
    scores = {s["server"]: s for s in out["scores"]}
    assert scores["baseline"]["score"] == pytest.approx(62.5) and scores["baseline"]["passes"] == 2
    assert scores["baseline"]["stderr"] == pytest.approx(stats.standard_error([100, 0, 50, 100]))
    assert scores["candidate"]["score"] == pytest.approx(87.5) and scores["candidate"]["n_items"] == 4
    (verdict,) = out["verdicts"]
    expected = stats.paired_comparison([100, 50, 100, 100], [100, 0, 50, 100], 3.0)
    assert verdict["d"] == pytest.approx(25.0) and verdict["se_d"] == pytest.approx(expected.se_d)
    assert verdict["verdict"] == expected.verdict == "inconclusive"
    assert (verdict["candidate"], verdict["baseline"], verdict["speculative"], verdict["n"]) == ("candidate", "baseline", False, 4)
    # deterministic and strict JSON (no NaN)
    assert json.dumps(out, sort_keys=True, allow_nan=False) == json.dumps(summarize_evals(run_dir, _plan()), sort_keys=True, allow_nan=False)


def test_items_pair_by_id_and_hash_and_speculative_comes_from_the_candidate(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    _write(run_dir, "baseline", _rows([[1, 1, 1]], ["a", "b", "c"]))
    cand = _rows([[1, 1, 1]], ["a", "b", "c"])
    cand[2]["item_sha256"] = "changed"  # a different item under the same id is never paired
    _write(run_dir, "candidate", cand)
    (verdict,) = summarize_evals(run_dir, _plan(spec_candidate=True))["verdicts"]
    assert verdict["n"] == 2 and verdict["speculative"] is True
    # two identical items: d = 0, SE floored at 100 / 2 (one pass), far from proving equivalence
    assert verdict["d"] == 0.0 and verdict["se_d"] == pytest.approx(50.0) and verdict["verdict"] == "inconclusive"


def test_one_item_gives_nulls_not_nan(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    _write(run_dir, "baseline", _rows([[1]], ["a"]))
    _write(run_dir, "candidate", _rows([[0]], ["a"]))
    out = summarize_evals(run_dir, _plan())
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
        for filt, resp in (("strict-match", row["Question"]), ("flexible-extract", "(A)" if i % 2 else row["Correct Answer"])):
            samples.append({"doc_id": i, "doc": doc, "target": "(A)", "arguments": [[row["Question"]]],
                            "resps": [[row["Question"] + " so the answer is " + row["Correct Answer"]]],
                            "filtered_resps": [resp], "filter": filt, "exact_match": float(i % 2)})
    items = items_from_samples(task, samples, file_rows)
    assert [it.item_id for it in items] == [r["Record ID"] for r in file_rows]
    assert {it.extracted_answer for it in items} == {"(A)", "[unparsed]"}
    rows = [{"item_id": it.item_id, "item_sha256": it.item_sha256, "pass_index": 0, "seed": 1,
             "extracted_answer": it.extracted_answer, "target": it.target, "score": it.score,
             "n_output_tokens": None, "bin": None} for it in items]
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
