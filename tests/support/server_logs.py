"""The real CPU vLLM 0.32 logs in tests/fixtures/server-logs (their README says how each was made),
read as the tests that parse them need: whole, or line by line as the server wrote them."""

from __future__ import annotations

from pathlib import Path

SERVER_LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "server-logs"


def real_log_path(name: str) -> Path:
    """The log named ``name`` (``compiled-start``, ``refused-flag``, ``missing-worker-module``)."""
    return SERVER_LOGS / f"real-cpu-vllm-0.32-{name}.log"


def real_log(name: str) -> str:
    """The whole log, as text."""
    return real_log_path(name).read_text(encoding="utf-8")


def real_log_lines(name: str) -> list[bytes]:
    """The log's lines as the server wrote them: bytes, line ends kept (its \\r progress lines
    included), so a test can feed them to a growing file exactly as vLLM appended them."""
    return real_log_path(name).read_bytes().splitlines(keepends=True)
