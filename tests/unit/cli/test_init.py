"""`byog init`: flags only (no terminal) write a plan `byog plan` accepts; an existing file is kept without
--force; a missing answer names its flag; on a terminal (a pseudo-terminal here) it asks."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from byog.pipeline.init import probe_vllm
from byog.plans.load import load_plan
from tests.support.cli import byog_env, byog_without_terminal
from tests.support.git_repos import upstream_and_pr

SMOLLM2 = "builtin:smollm2-135m-instruct"


def _init(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`byog init ARGS` with stdin not a terminal (as in CI or a script), and no GPU."""
    return byog_without_terminal("init", *args, cwd=cwd, env=byog_env(HF_HUB_OFFLINE="1", CUDA_VISIBLE_DEVICES=""))


def test_flags_only_write_a_plan_that_byog_plan_accepts(tmp_path: Path) -> None:
    done = _init("--model", SMOLLM2, "--candidate", "installed", "--baseline", "flags:--enforce-eager", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    plan, text = load_plan(str(tmp_path / "plan.yaml"))
    assert set(plan.servers) == {"candidate", "baseline"}
    assert plan.servers["candidate"].args == ["--dtype", "float32"]  # a CPU plan's servers: init_plan.CPU_SERVER_ARGS
    assert plan.servers["baseline"].args == ["--dtype", "float32", "--enforce-eager"]
    assert plan.comparison_pairs[0].differs_in == ["--enforce-eager"]
    assert plan.comparison_pairs[0].baseline_is_stock is False
    assert [e.task for e in plan.evals] == ["gsm8k", "arithmetic_generated"]
    assert "# " in text and "CPU build" in text  # the defaults' reasons are written beside them
    # what `byog plan` prints about it, on one screen: servers, pairs, tiers
    assert "pairs: candidate vs baseline" in done.stdout and "| smoke |" in done.stdout
    assert "byog run plan.yaml --tier smoke" in done.stdout
    planned = byog_without_terminal("plan", str(tmp_path / "plan.yaml"), cwd=tmp_path)
    assert planned.returncode == 0, planned.stdout + planned.stderr


def test_an_existing_plan_is_kept_without_force(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text("mine\n")
    done = _init("--model", SMOLLM2, "--candidate", "installed", cwd=tmp_path)
    assert done.returncode == 2 and "without --force" in done.stderr, done.stderr
    assert (tmp_path / "plan.yaml").read_text() == "mine\n"
    forced = _init("--model", SMOLLM2, "--candidate", "installed", "--baseline", "installed", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert load_plan(str(tmp_path / "plan.yaml"))[0].comparison_pairs[0].baseline_is_stock is True


def test_without_a_terminal_a_missing_answer_names_its_flag(tmp_path: Path) -> None:
    done = _init("--candidate", "installed", cwd=tmp_path)
    assert done.returncode == 2 and "--model" in done.stderr and "Traceback" not in done.stderr
    for args, said in (
        (["--model", SMOLLM2, "--candidate", "docker:x"], "--candidate 'docker:x'"),
        (["--model", "./nope", "--candidate", "installed"], "does not exist or holds no config.json"),
        (["--model", SMOLLM2, "--candidate", "python:/nonexistent/bin/python"], "no such interpreter or venv"),
        (["--model", SMOLLM2, "--candidate", "installed", "--for", "not-a-pr"], "--for: 'not-a-pr' is not"),
        (["--model", SMOLLM2, "--candidate", "installed", "--switch", "on"], "write KEY=VALUE"),
    ):
        bad = _init(*args, cwd=tmp_path)
        assert bad.returncode == 2 and said in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert not (tmp_path / "plan.yaml").exists()


def _read_until(fd: int, needle: str, seen: list[str], limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while needle not in "".join(seen):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {needle!r} in {''.join(seen)[-2000:]!r}")
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                seen.append(os.read(fd, 4096).decode(errors="replace"))
            except OSError:
                return


def test_on_a_terminal_it_asks_what_the_flags_leave_out(tmp_path: Path) -> None:
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "byog", "init", "--baseline", "flags:--enforce-eager"],
        cwd=tmp_path,
        env=byog_env(HF_HUB_OFFLINE="1", CUDA_VISIBLE_DEVICES=""),
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    seen: list[str] = []
    try:
        for question, reply in (
            ("Model", SMOLLM2),
            ("Candidate", "installed"),
            ("Switch", ""),
            ("Long-context", "n"),
            ("Reasoning evals", "n"),
            ("The PR", "vllm-project/vllm#123"),
        ):
            _read_until(primary, question, seen)
            seen.clear()  # each question is answered once: the next wait reads only what follows
            os.write(primary, (reply + "\n").encode())
        _read_until(primary, "next: byog run", seen, limit_s=300)
        assert proc.wait(timeout=60) == 0, "".join(seen)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    plan, text = load_plan(str(tmp_path / "plan.yaml"))
    assert plan.servers["baseline"].args == ["--dtype", "float32", "--enforce-eager"]
    assert "for vllm-project/vllm#123" in text


def test_the_merge_base_of_the_checkout_is_the_baseline_and_a_release_says_how_far_behind(tmp_path: Path) -> None:
    # the release tag of the vLLM installed beside byog (the baseline of the second init), on upstream main
    installed = str(probe_vllm(sys.executable)["version"]).split("+", 1)[0]
    checkout, base, _ = upstream_and_pr(tmp_path, installed)
    python = f"python:{sys.executable}"
    done = _init("--model", SMOLLM2, "--candidate", python, "--checkout", str(checkout), "-o", "a.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"baseline = merge base {base[:7]}" in done.stdout
    assert f"pip install vllm --extra-index-url https://wheels.vllm.ai/{base}/cpu" in done.stdout  # no GPU: cpu
    plan, text = load_plan(str(tmp_path / "a.yaml"))
    assert plan.servers["candidate"].launched().python == sys.executable  # type: ignore[union-attr]
    assert "<SET-ME" in (plan.servers["baseline"].launched().python or "")  # type: ignore[union-attr]
    assert f"# baseline = merge base {base[:7]}." in text
    # the vLLM beside byog as the baseline: a release, so the line counts the merge base's commits it lacks
    release = _init(
        "--model", SMOLLM2, "--candidate", python, "--baseline", "installed", "--checkout", str(checkout),
        "-o", "b.yaml", cwd=tmp_path,
    )  # fmt: skip
    assert release.returncode == 0, release.stderr
    assert f"is 3 commits behind the merge base {base[:7]}: the difference includes them" in release.stdout
