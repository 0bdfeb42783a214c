"""The /health wait of every runtime: a server that exits first is reported with vLLM's root cause
(read from the real CPU vLLM log of a missing worker module), not only its last traceback lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.errors import ByogError
from byog.runtimes.record import tail_file, wait_for_health

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "server-logs"


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        ("missing-worker-module", "ModuleNotFoundError: No module named 'byog_no_such_module'"),
        ("refused-flag", "vLLM refused its arguments: argument --dtype: invalid choice: 'float7'"),
    ],
)
def test_a_server_that_exits_first_is_reported_with_its_cause(log: str, cause: str) -> None:
    path = LOGS / f"real-cpu-vllm-0.32-{log}.log"
    with pytest.raises(ByogError) as raised:
        wait_for_health(
            "http://127.0.0.1:9",
            name="cand",
            alive=lambda: False,
            log_tail=lambda: tail_file(path),
            timeout_s=5,
            log_path=path,
        )
    first = str(raised.value).split("\n", 1)[0]
    assert first.startswith(f"server 'cand' exited before it became healthy: {cause}"), first
