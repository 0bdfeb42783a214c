from __future__ import annotations

import re
from pathlib import Path

import yaml

from byog.core.settings import PACKAGED_DATASETS
from byog.evals.arithmetic_generate import generate_rows, jsonl
from byog.evals.data import read_split, resolve_source
from byog.evals.lm_eval_adapter import override_yaml, task_yaml
from byog.plans.tasks import get_task


def test_the_shipped_rows_are_exactly_the_generators() -> None:
    shipped = (PACKAGED_DATASETS / "arithmetic" / "test.jsonl").read_text(encoding="utf-8")
    assert shipped == jsonl(generate_rows())
    rows = generate_rows()
    assert len(rows) == len({r["id"] for r in rows}) == 200
    assert {r["id"][1] for r in rows[:20]} == {"+", "*"}  # a short prefix already mixes both operators
    assert next(r for r in rows if r["id"] == "7*8")["answer"] == "56"


def test_the_task_reads_the_shipped_rows_labelled_generated(tmp_path: Path) -> None:
    task = get_task("arithmetic_generated")
    source = resolve_source(task, tmp_path / "some-other-data-dir")  # the rows are byog's, wherever --data-dir points
    assert source.kind == "generated" and "not a published benchmark" in source.label
    assert source.files == {"test": [PACKAGED_DATASETS / "arithmetic" / "test.jsonl"]}
    assert len(read_split(source, "test")) == 200


def test_the_override_includes_byogs_yaml_and_its_filter_extracts_the_answer() -> None:
    task = get_task("arithmetic_generated")
    cfg = override_yaml(task, resolve_source(task, None), dict(task.generation))
    assert cfg["include"] == str(task_yaml(task)) and task_yaml(task).is_file()
    own = yaml.safe_load(task_yaml(task).read_text(encoding="utf-8"))
    (flt,) = [f for f in own["filter_list"] if f["name"] == task.lm_eval_filter]
    pattern = re.compile(flt["filter"][0]["regex_pattern"])
    assert pattern.findall("7 + 5 = 12.")[0] == "12"
    assert pattern.findall("12")[0] == "12"
    assert pattern.findall("To add 7 and 5, count on: 12") == []  # no '=' and no leading number: lm-eval's [invalid]
