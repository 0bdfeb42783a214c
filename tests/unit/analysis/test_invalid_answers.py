"""The [invalid] answers of an eval: counted with the extraction rule results.json records and the raw
outputs items.parquet kept, by item id; none shown for a gated task; None for a file of item schema 1."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from byog.analysis.invalid_answers import invalid_answers, with_invalid_answers
from byog.plans.tasks import TASKS
from byog.schemas.evals import EvalItemRowV1
from tests.support.flipped import arithmetic_rows, write_task
from tests.support.synthetic import SyntheticSpec, make_run_dir

ROWS = arithmetic_rows(6)


def test_invalid_answers_with_their_raw_output_and_rule(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(eval_items=4))
    write_task(run_dir, "candidate", "arithmetic_generated", ROWS, {0, 1, 2}, raw_of=lambda i: f"no number {i}")
    write_task(run_dir, "candidate", "gpqa_diamond", ROWS, {0}, raw_of=lambda i: "gated text")
    seen = invalid_answers(run_dir, "candidate", "arithmetic_generated")
    assert seen is not None and (seen.rows, seen.gated) == (6, False)
    assert seen.extraction == TASKS["arithmetic_generated"].answer_extraction
    by_id = sorted((str(ROWS[i]["id"]), f"no number {i}") for i in (3, 4, 5))
    assert [(a.item_id, a.text, a.chars) for a in seen.answers] == [(i, t, len(t)) for i, t in by_id]
    gated = invalid_answers(run_dir, "candidate", "gpqa_diamond")
    assert gated is not None and gated.gated and len(gated.answers) == 5 and not gated.kept  # a forged file's text too
    evals = [("candidate", "gsm8k"), ("candidate", "arithmetic_generated"), ("candidate", "gpqa_diamond")]
    assert [s.task for s in with_invalid_answers(run_dir, evals)] == ["arithmetic_generated", "gpqa_diamond"]


def test_a_file_of_item_schema_1_has_none(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(eval_items=4))
    path = run_dir.eval_items("candidate", "gsm8k")
    rows = [{k: v for k, v in r.items() if k in EvalItemRowV1.model_fields} for r in pq.read_table(path).to_pylist()]
    pq.write_table(pa.Table.from_pylist([r | {"extracted_answer": "[invalid]"} for r in rows]), path)
    assert invalid_answers(run_dir, "candidate", "gsm8k") is None
    assert with_invalid_answers(run_dir, [("candidate", "gsm8k")]) == []
