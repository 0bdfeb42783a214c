"""Data resolution, hashes, the GPQA fixture's schema, and lm-eval loading our re-pointed tasks offline."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from byog.core import settings
from byog.core.errors import UsageError
from byog.evals import data
from byog.plans.tasks import TASKS, get_task, parse_task_list

GPQA_COLUMNS_HEAD = [
    "Pre-Revision Question",
    "Pre-Revision Correct Answer",
    "Pre-Revision Incorrect Answer 1",
    "Pre-Revision Incorrect Answer 2",
    "Pre-Revision Incorrect Answer 3",
    "Pre-Revision Explanation",
    "Self-reported question-writing time (minutes)",
    "Question",
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
    "Explanation",
]
SHARED = settings.PACKAGED_DATASETS


def test_item_hash_is_canonical() -> None:
    assert data.item_sha256({"a": 1, "b": "x"}) == data.item_sha256({"b": "x", "a": 1})
    assert data.item_sha256({"a": 1}) != data.item_sha256({"a": 2})


def test_data_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag, env = tmp_path / "flag", tmp_path / "env"
    flag.mkdir()
    env.mkdir()
    monkeypatch.setenv(settings.DATA_DIR_ENV, str(env))
    assert settings.resolve_data_dir(flag) == flag
    assert settings.resolve_data_dir(None) == env
    with pytest.raises(UsageError):
        settings.resolve_data_dir(tmp_path / "missing")


def test_gsm8k_and_aime25_resolve_to_the_packaged_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.DATA_DIR_ENV, raising=False)
    source = data.resolve_source(get_task("gsm8k"), settings.resolve_data_dir(None))
    assert source.kind == "local" and source.revision == TASKS["gsm8k"].dataset.revision
    # the sha256 byog/datasets/gsm8k/PROVENANCE.md lists for test.jsonl
    assert source.file_sha256()["test"] == "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"
    aime = data.resolve_source(get_task("aime25"), SHARED)
    assert aime.kind == "local" and len(data.read_split(aime, "test")) == 30


def test_gated_and_mrcr_fall_back_to_labelled_fixtures_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    gpqa = data.resolve_source(get_task("gpqa_diamond"), tmp_path)
    assert gpqa.kind == "fixture" and "fixture" in gpqa.label and "not Idavidrein/gpqa" in gpqa.label
    mrcr = data.resolve_source(get_task("mrcr"), tmp_path)
    assert mrcr.kind == "fixture" and "MRCR v2" not in mrcr.label
    assert data.resolve_source(get_task("mrcr_generated"), tmp_path).label.startswith("generated")


def test_a_pulled_copy_wins_over_the_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    task = get_task("mrcr")
    target = data.hub_cache_dir(tmp_path, task) / "8needle"
    target.mkdir(parents=True)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.Table.from_pylist(data.read_rows(data.FIXTURES_DIR / "mrcr.FIXTURE.jsonl")), target / "8needle_0.parquet"
    )
    source = data.resolve_source(task, tmp_path)
    assert source.kind == "hub-cache" and source.label == "MRCR v2" and source.revision == task.dataset.revision


def test_gpqa_fixture_has_the_exact_schema() -> None:
    with (data.FIXTURES_DIR / "gpqa_diamond.FIXTURE.csv").open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = reader.fieldnames or []
        rows = list(reader)
    assert columns[: len(GPQA_COLUMNS_HEAD)] == GPQA_COLUMNS_HEAD
    assert len(columns) == 78 and columns[-1] == "Canary String" and "Record ID" in columns
    assert all("FIXTURE" in row["Question"] and row["Record ID"].startswith("byogfixture") for row in rows)


def test_pull_offline_is_one_sentence_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from byog.core.errors import EnvironmentProblem

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EnvironmentProblem) as err:
        data.pull([get_task("gpqa_diamond")], tmp_path)
    assert err.value.exit_code == 3 and "\n" not in str(err.value)


def test_unknown_task_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown eval task 'gsm9k'"):
        parse_task_list("gsm8k,gsm9k")


def _load_docs(task_name: str, source: data.DataSource) -> list[dict]:
    """Build the re-pointed lm-eval task (real lm-eval, no server) and return its eval docs."""
    import tempfile

    import yaml
    from lm_eval.tasks import TaskManager

    from byog.evals.lm_eval_adapter import generation_kwargs, override_yaml

    task = get_task(task_name)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = override_yaml(task, source, generation_kwargs(task))
        Path(tmp, f"byog_{task.name}.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
        manager = TaskManager(include_path=tmp, include_defaults=False)
        loaded = manager.load([f"byog_{task.name}"])["tasks"]
        lm_task = next(iter(loaded.values()))
        return list(lm_task.eval_docs)


def test_lm_eval_reads_gsm8k_from_the_local_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    docs = _load_docs("gsm8k", data.resolve_source(get_task("gsm8k"), SHARED))
    assert len(docs) == 1319 and docs[0]["question"].startswith("Janet")


def test_lm_eval_reads_the_gpqa_fixture_with_its_own_process_docs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    docs = _load_docs("gpqa_diamond", data.resolve_source(get_task("gpqa_diamond"), tmp_path))
    assert len(docs) == 5
    assert all(doc["answer"] in {"(A)", "(B)", "(C)", "(D)"} and len(doc["choices"]) == 4 for doc in docs)
