"""lm-eval's git probe: outside a git checkout it prints git's ``fatal: not a git repository`` on
byog's stderr; within ``quiet_git_probe`` it records the same commit and prints nothing. And which
docs a pass runs: ``samples=`` picks them by index, each keeping its identity."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

evaluator = pytest.importorskip("lm_eval.evaluator")

from byog.evals.lm_eval_adapter import quiet_git_probe  # noqa: E402
from byog.plans.tasks import get_task  # noqa: E402


def test_outside_a_checkout_nothing_reaches_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # tmp_path is not inside a repository
    evaluator.get_git_commit_hash()
    assert "not a git repository" in capfd.readouterr().err  # lm-eval's own probe (what byog hides)
    with quiet_git_probe():
        assert evaluator.get_git_commit_hash() is None
    assert capfd.readouterr().err == ""


def test_inside_a_checkout_the_same_commit_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    monkeypatch.chdir(tmp_path)
    original, theirs = evaluator.get_git_commit_hash, evaluator.get_git_commit_hash()
    with quiet_git_probe():
        assert evaluator.get_git_commit_hash() == theirs and len(theirs) >= 7
    assert evaluator.get_git_commit_hash is original  # lm-eval's own again on the way out


def test_samples_pick_docs_by_index_and_keep_their_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """lm-eval 0.4.13's own dummy model (no server): ``samples=`` runs exactly those docs, in any order
    given, and each item keeps its doc's index and id (lm-eval logs doc_id as indices[i])."""
    import dataclasses

    from byog.evals import lm_eval_adapter as adapter
    from byog.evals.data import read_split, resolve_source
    from byog.schemas.server import Endpoint

    monkeypatch.setattr(adapter, "model_spec", lambda *args, **kw: ("dummy", {}))
    task = dataclasses.replace(get_task("arithmetic_generated"), api="completions")  # dummy has no chat template
    source = resolve_source(task, None)
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=2048)
    gen = adapter.generation_kwargs(task, endpoint, {})
    items, _ = adapter.run_pass(
        task, source, endpoint, seed=1, limit=None, num_concurrent=1, gen=gen, samples=[57, 3, 120]
    )
    rows = read_split(source, "test")
    assert [(i.doc_id, (i.item_id, i.item_sha256)) for i in items] == [
        (d, adapter.item_identity(task, d, rows, {})) for d in (3, 57, 120)
    ]
