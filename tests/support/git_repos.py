"""Git repositories built in a test: an upstream vLLM main and a PR checkout branching off it (no network)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def commit(repo: Path, message: str) -> str:
    (repo / "f.txt").write_text(message)
    git(repo, "add", "f.txt")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def upstream_and_pr(tmp_path: Path, release_version: str = "0.32.0") -> tuple[Path, str, str]:
    """An 'upstream' repo (main: release tag v<release_version>, then 3 more commits) and a PR clone branching
    at its tip, while upstream main moves on by 2 more; (checkout, the merge base, the release's commit)."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    release = commit(upstream, "release")
    git(upstream, "tag", f"v{release_version}")
    for i in range(3):
        base = commit(upstream, f"main {i}")
    pr = tmp_path / "pr"
    git(tmp_path, "clone", "-q", str(upstream), str(pr))
    git(pr, "remote", "rename", "origin", "upstream")
    git(pr, "remote", "set-url", "upstream", "https://github.com/vllm-project/vllm.git")
    git(pr, "config", "remote.upstream.fetch", "+refs/heads/*:refs/remotes/upstream/*")
    git(pr, "checkout", "-q", "-b", "my-pr")
    commit(pr, "my change")
    for i in range(2):
        commit(upstream, f"later {i}")
    # what `git fetch upstream` would bring: upstream's later main (fetched from the local path)
    git(pr, "fetch", "-q", str(upstream), "+refs/heads/main:refs/remotes/upstream/main")
    return pr, base, release
