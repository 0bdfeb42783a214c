"""lm-eval's git probe: outside a git checkout it prints git's ``fatal: not a git repository`` on
byog's stderr; within ``quiet_git_probe`` it records the same commit and prints nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

evaluator = pytest.importorskip("lm_eval.evaluator")

from byog.evals.lm_eval_adapter import quiet_git_probe  # noqa: E402


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
