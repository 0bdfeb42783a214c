"""The root filesystem tarball's cache: built once, however many byog processes ask at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from byog.images.context import ROOTFS_SCRIPT, rootfs_tarball


def _root_with_script(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout whose rootfs script takes a moment, counts its runs and writes its tarball as the
    real one does (a temporary file, then a rename)."""
    root, runs = tmp_path / "checkout", tmp_path / "runs.txt"
    (root / ROOTFS_SCRIPT).parent.mkdir(parents=True)
    (root / ROOTFS_SCRIPT).write_text(
        f'set -e\necho run >> "{runs}"\nsleep 1\necho tar > "$1.part"\nmv "$1.part" "$1"\necho "rootfs: built"\n'
    )
    return root, runs


def test_builds_started_together_run_the_script_once_and_share_its_tarball(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BYOG_CACHE_DIR", str(tmp_path / "cache"))
    root, runs = _root_with_script(tmp_path)
    found: list[Path] = []
    logs: list[str] = []
    builds = [threading.Thread(target=lambda: found.append(rootfs_tarball(root, logs.append))) for _ in range(3)]
    for build in builds:
        build.start()
    for build in builds:
        build.join()
    assert runs.read_text().splitlines() == ["run"]  # the others waited for it, then reused its tarball
    assert len(set(found)) == 1 and found[0].read_text() == "tar\n"
    assert sorted(line.split(":")[0] for line in logs if "reusing" in line) == ["rootfs", "rootfs"]


def test_a_cached_tarball_is_reused_without_running_the_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BYOG_CACHE_DIR", str(tmp_path / "cache"))
    root, runs = _root_with_script(tmp_path)
    first = rootfs_tarball(root, lambda line: None)
    assert rootfs_tarball(root, lambda line: None) == first and runs.read_text().splitlines() == ["run"]
