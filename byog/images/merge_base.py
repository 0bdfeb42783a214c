"""A PR checkout's merge base with vLLM's main, the precompiled wheel vLLM publishes for it, and how
far a baseline's commit is from it.

Why: vLLM's main moves fast, so a PR measured against an older release claims main's gains as its
own. The fair stock baseline is vLLM at the PR's merge base, and vLLM builds a wheel of every commit
on main (docs.vllm.ai, contributing/ci/nightly_builds): ``https://wheels.vllm.ai/{commit}`` is a
package index of that commit's default variant (the CUDA build), ``https://wheels.vllm.ai/{commit}/{variant}``
of another (``cpu``, ``cu129``, ``cu130``: not every variant exists for every commit), and
``https://wheels.vllm.ai/{version}/{variant}`` of a release. Everything here asks ``git`` in the
checkout; what the checkout cannot answer (no upstream remote, a commit it lacks) is ``None`` and
reads "unknown", never a guess.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from byog.core.errors import EnvironmentProblem

WHEEL_INDEX = "https://wheels.vllm.ai"
UPSTREAM = "vllm-project/vllm"
# a remote of the upstream repository, over https or ssh, with or without .git
_UPSTREAM_URL = re.compile(r"github\.com[:/]vllm-project/vllm(\.git)?/?$")
_GIT_TIMEOUT_S = 30


@dataclass(frozen=True)
class MergeBase:
    """The candidate checkout's merge base with upstream main, or why it is unknown."""

    checkout: str
    head: str | None
    commit: str | None  # full 40-hex commit, None when unknown
    upstream_ref: str | None  # e.g. "upstream/main"
    why_unknown: str | None = None

    @property
    def short(self) -> str:
        return self.commit[:7] if self.commit else "unknown"


def _git(checkout: Path, *args: str) -> str | None:
    """``git -C checkout ARGS``'s stdout stripped, or None when git fails (no repository, unknown ref)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), *args], capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def upstream_remote(checkout: Path) -> str | None:
    """The name of the checkout's remote that points at vllm-project/vllm (fetch URL), or None."""
    listed = _git(checkout, "remote", "-v") or ""
    for line in listed.splitlines():
        parts = line.split()
        if len(parts) >= 2 and _UPSTREAM_URL.search(parts[1]):
            return parts[0]
    return None


def merge_base(checkout: Path) -> MergeBase:
    """``git merge-base HEAD <upstream>/main`` in ``checkout``; unknown (with the reason) where it cannot be said."""
    where = str(checkout.resolve())
    head = _git(checkout, "rev-parse", "HEAD")
    if head is None:
        return MergeBase(where, None, None, None, f"{where} is not a git checkout")
    remote = upstream_remote(checkout)
    if remote is None:
        return MergeBase(where, head, None, None, f"no remote of {where} points at {UPSTREAM}")
    ref = f"{remote}/main"
    if _git(checkout, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") is None:
        return MergeBase(where, head, None, ref, f"{ref} is not fetched in {where} (git fetch {remote})")
    base = _git(checkout, "merge-base", "HEAD", ref)
    if base is None:
        return MergeBase(where, head, None, ref, f"HEAD and {ref} share no commit in {where}")
    return MergeBase(where, head, base, ref)


def release_commit(checkout: Path, version: str) -> str | None:
    """The commit of release ``version``'s tag (``v0.32.0``) in the checkout, or None when it lacks the tag."""
    return _git(checkout, "rev-parse", "--verify", "--quiet", f"v{version}^{{commit}}")


def commits_between(checkout: Path, older: str, newer: str) -> int | None:
    """Commits reachable from ``newer`` but not from ``older`` (``git rev-list --count older..newer``); None
    when the checkout lacks either commit."""
    for commit in (older, newer):
        if _git(checkout, "cat-file", "-e", f"{commit}^{{commit}}") is None:
            return None
    counted = _git(checkout, "rev-list", "--count", f"{older}..{newer}")
    return int(counted) if counted and counted.isdigit() else None


def distance_line(baseline: str, baseline_commit: str | None, base: MergeBase, behind: int | None) -> str:
    """How far the baseline is from the candidate's merge base, in one line.

    ``baseline``: how the baseline is named ("vllm 0.32.0", "the merge-base wheel"); ``behind``: the
    commits of the merge base the baseline lacks (``commits_between(baseline, merge base)``).
    """
    if base.commit is None:
        return f"baseline {baseline} vs the candidate's merge base: unknown ({base.why_unknown})"
    if baseline_commit is not None and (
        baseline_commit.startswith(base.commit) or base.commit.startswith(baseline_commit)
    ):
        return f"baseline = merge base {base.short}"
    if behind is None:
        return (
            f"baseline {baseline} vs the merge base {base.short}: distance unknown "
            f"({'its commit is not known' if baseline_commit is None else 'the checkout lacks its commit'})"
        )
    if behind == 0:
        return (
            f"baseline {baseline} is ahead of the merge base {base.short}: the difference includes main's later commits"
        )
    plural = "commit" if behind == 1 else "commits"
    return f"baseline {baseline} is {behind} {plural} behind the merge base {base.short}: the difference includes them"


def wheel_index(commit: str, variant: str | None = None) -> str:
    """The package index of vLLM's precompiled wheel of ``commit`` (its default variant, or ``variant``)."""
    return f"{WHEEL_INDEX}/{commit}" + (f"/{variant}" if variant else "")


def install_command(python: str, commit: str, variant: str | None) -> list[str]:
    """The pip command that installs the merge-base wheel into the environment of ``python``."""
    return [python, "-m", "pip", "install", "vllm", "--extra-index-url", wheel_index(commit, variant)]


def install_baseline(venv: Path, commit: str, variant: str | None) -> Path:
    """Create a fresh venv at ``venv`` and install the merge-base wheel there; its interpreter."""
    if venv.exists():
        raise EnvironmentProblem(f"{venv} exists: --install-baseline creates a fresh environment; name a new folder")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run(install_command(str(python), commit, variant), check=False)
    if done.returncode != 0:
        raise EnvironmentProblem(
            f"pip could not install vLLM at {commit[:7]} from {wheel_index(commit, variant)} into {venv} "
            "(not every commit has every variant: see the index in a browser)"
        )
    return python
