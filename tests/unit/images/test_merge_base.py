"""The merge base, the wheel index and the distance line, on a git repository built in the test (no network)."""

from __future__ import annotations

from pathlib import Path

from byog.images import merge_base as mb
from tests.support.git_repos import git as _git
from tests.support.git_repos import upstream_and_pr as _upstream_and_pr


def test_merge_base_is_where_the_pr_left_upstream_main(tmp_path: Path) -> None:
    pr, base, _ = _upstream_and_pr(tmp_path)
    found = mb.merge_base(pr)
    assert found.commit == base and found.upstream_ref == "upstream/main" and found.why_unknown is None
    assert found.head != base


def test_the_upstream_remote_is_found_by_its_url_over_ssh_too(tmp_path: Path) -> None:
    pr, base, _ = _upstream_and_pr(tmp_path)
    _git(pr, "remote", "rename", "upstream", "vllm")
    _git(pr, "remote", "set-url", "vllm", "git@github.com:vllm-project/vllm")
    _git(pr, "fetch", "-q", str(tmp_path / "upstream"), "+refs/heads/main:refs/remotes/vllm/main")
    assert mb.upstream_remote(pr) == "vllm"
    assert mb.merge_base(pr).commit == base


def test_without_an_upstream_remote_the_merge_base_is_unknown_and_says_why(tmp_path: Path) -> None:
    pr, _, _ = _upstream_and_pr(tmp_path)
    _git(pr, "remote", "set-url", "upstream", "https://github.com/someone/fork.git")
    found = mb.merge_base(pr)
    assert (
        found.commit is None and "no remote" in (found.why_unknown or "") and "vllm-project/vllm" in found.why_unknown
    )
    assert mb.merge_base(tmp_path).commit is None  # not a checkout at all
    assert "unknown" in mb.distance_line("vllm 0.32.0", None, found, None)


def test_distance_line_for_the_merge_base_itself_and_for_a_release(tmp_path: Path) -> None:
    pr, base, release = _upstream_and_pr(tmp_path)
    found = mb.merge_base(pr)
    assert mb.distance_line("the merge-base wheel", base, found, 0) == f"baseline = merge base {base[:7]}"
    assert mb.release_commit(pr, "0.32.0") == release
    behind = mb.commits_between(pr, release, base)
    assert behind == 3
    line = mb.distance_line("vllm 0.32.0", release, found, behind)
    assert line == f"baseline vllm 0.32.0 is 3 commits behind the merge base {base[:7]}: the difference includes them"
    missing = "f" * 40
    assert mb.commits_between(pr, missing, base) is None
    assert "distance unknown" in mb.distance_line("vllm 9.9", missing, found, None)


def test_wheel_index_follows_vllms_per_commit_layout() -> None:
    commit = "1a2b3c4d" * 5
    assert mb.wheel_index(commit) == f"https://wheels.vllm.ai/{commit}"
    assert mb.wheel_index(commit, "cpu") == f"https://wheels.vllm.ai/{commit}/cpu"
    assert mb.install_command("/v/bin/python", commit, "cu130")[-2:] == [
        "--extra-index-url",
        f"https://wheels.vllm.ai/{commit}/cu130",
    ]
