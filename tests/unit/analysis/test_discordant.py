"""The items a pair scored differently: the verdict's own pairing and count, the direction of each
flip, the prompt only from rows byog ships (matched by sha256), and nothing of a gated task but ids,
hashes and scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.analysis.discordant import cells, discordant_items, is_gated
from byog.analysis.summary import derive_summary
from byog.core.paths import RunDir
from tests.support.flipped import HOSTILE_ANSWER, arithmetic_rows, write_task
from tests.support.synthetic import SyntheticSpec, make_run_dir

ROWS = arithmetic_rows(20)
CANDIDATE_RIGHT = set(range(0, 12))  # loses 12..13 (baseline right), wins 0..1 (baseline wrong)
BASELINE_RIGHT = set(range(2, 14))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    run_dir = make_run_dir(tmp_path_factory.mktemp("flipped") / "run", SyntheticSpec(eval_items=10))
    write_task(run_dir, "candidate", "arithmetic_generated", ROWS, CANDIDATE_RIGHT)
    write_task(run_dir, "baseline", "arithmetic_generated", ROWS, BASELINE_RIGHT)
    write_task(run_dir, "candidate", "gpqa_diamond", ROWS, {0, 1}, answer_of=lambda i: HOSTILE_ANSWER)
    write_task(run_dir, "baseline", "gpqa_diamond", ROWS, {2}, answer_of=lambda i: HOSTILE_ANSWER)
    return run_dir


def test_the_flipped_items_are_the_verdicts_discordant_items(run: RunDir) -> None:
    found = discordant_items(run, "arithmetic_generated", "candidate", "baseline")
    verdict = next(v for v in derive_summary(run).evals.verdicts if v.task == "arithmetic_generated")
    assert len(found.items) == verdict.discordant == 4 and found.n == verdict.n == 20
    assert (found.lost, found.won) == (2, 2)
    assert found.flipped_line() == "4 items flipped: 2 ✓→✗, 2 ✗→✓"
    assert {i.item_id for i in found.items if i.lost} == {ROWS[12]["id"], ROWS[13]["id"]}  # listed first
    assert {i.item_id for i in found.items[2:]} == {ROWS[0]["id"], ROWS[1]["id"]}
    lost = next(i for i in found.items if i.item_id == ROWS[12]["id"])
    assert lost.candidate.answers == (f"{ROWS[12]['answer']}0",) and lost.baseline.answers == (ROWS[12]["answer"],)
    assert (lost.candidate.score, lost.baseline.score) == (0.0, 100.0)


def test_the_prompt_comes_from_byogs_own_rows_by_sha256(run: RunDir) -> None:
    found = discordant_items(run, "arithmetic_generated", "candidate", "baseline")
    by_id = {row["id"]: row for row in ROWS}
    assert all(item.prompt == by_id[item.item_id]["question"] for item in found.items)
    row = cells(found.items[0], gated=False)
    assert row[1].startswith("What is ") and row[2] == by_id[found.items[0].item_id]["answer"]


def test_a_row_with_another_sha256_gets_no_prompt(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(eval_items=10))
    changed = [{**row, "question": row["question"] + " (changed)"} for row in ROWS]
    write_task(run_dir, "candidate", "arithmetic_generated", changed, CANDIDATE_RIGHT)
    write_task(run_dir, "baseline", "arithmetic_generated", changed, BASELINE_RIGHT)
    found = discordant_items(run_dir, "arithmetic_generated", "candidate", "baseline")
    assert found.items and all(item.prompt is None for item in found.items)


def test_a_gated_task_keeps_only_ids_hashes_and_scores(run: RunDir) -> None:
    found = discordant_items(run, "gpqa_diamond", "candidate", "baseline")
    assert found.gated and is_gated(run, "candidate", "gpqa_diamond")
    assert len(found.items) == 3
    for item in found.items:
        assert item.prompt is None and item.target is None
        assert item.candidate.answers == () and item.baseline.answers == ()
        shown = " ".join(cells(item, gated=True))
        assert HOSTILE_ANSWER not in shown and "What is" not in shown


def test_a_task_byog_does_not_know_is_treated_as_gated(run: RunDir) -> None:
    assert is_gated(run, "candidate", "no_such_task")
    assert not is_gated(run, "candidate", "arithmetic_generated")
