"""`byog eval` / `byog data pull` failures a user can cause: one sentence, the right exit code."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import byog


def test_unreachable_endpoint_is_exit_3(tmp_path: Path) -> None:
    proc = byog("eval", "--endpoint", "http://127.0.0.1:9", "--run-dir", str(tmp_path), timeout=120)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr and "no OpenAI-compatible server" in proc.stderr


def test_unknown_task_is_exit_2(tmp_path: Path) -> None:
    proc = byog(
        "eval", "--endpoint", "http://127.0.0.1:9", "--tasks", "gsm8k,mmlu", "--run-dir", str(tmp_path), timeout=120
    )
    assert proc.returncode == 2 and "unknown eval task 'mmlu'" in proc.stderr


def test_fewer_seeds_than_passes_is_exit_2(tmp_path: Path) -> None:
    proc = byog(
        "eval",
        "--endpoint",
        "http://127.0.0.1:9",
        "--passes",
        "3",
        "--seeds",
        "1,2",
        "--run-dir",
        str(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 2 and "needs 3 seeds" in proc.stderr


def test_data_pull_without_the_hub_is_one_sentence_exit_3(tmp_path: Path) -> None:
    proc = byog("data", "pull", "--data-dir", str(tmp_path / "d"), timeout=120)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") <= 3 and "byog data pull" in proc.stderr


def _refused_on_a_fake_server(tmp_path: Path, max_model_len: int | None, *flags: str) -> str:
    """`byog eval` of byog's arithmetic on a loopback server stating ``max_model_len`` (None: none): its
    stderr, once it is one sentence with exit 2 and no request reached the server."""
    from tests.support.fake_vllm import FakeVllm

    fake = FakeVllm(max_model_len=max_model_len)
    try:
        proc = byog(
            "eval",
            "--endpoint",
            fake.base_url,
            "--tasks",
            "arithmetic_generated",
            *flags,
            "--run-dir",
            str(tmp_path / "run"),
            timeout=120,
        )
    finally:
        fake.close()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and fake.requests == []
    return proc.stderr


def test_a_task_the_servers_context_cannot_hold_is_one_sentence_exit_2(tmp_path: Path) -> None:
    said = _refused_on_a_fake_server(tmp_path, 100, "--max-gen-toks", "64")
    assert "eval 'arithmetic_generated' reserves 64 tokens for its prompts and answers in up to 64" in said
    assert "max_model_len = 100: raise it to at least 128, or lower its max_gen_toks to 36" in said


def test_a_server_that_does_not_say_its_context_is_one_sentence_exit_2(tmp_path: Path) -> None:
    said = _refused_on_a_fake_server(tmp_path, None)
    assert (
        "eval 'arithmetic_generated' needs 80 tokens of context (64 reserved for its prompts + answers in up to 16)"
        in said
    )
    assert "server 'endpoint' does not say its context (its /v1/models card has no max_model_len)" in said
