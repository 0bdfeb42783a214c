"""The /health wait of every runtime: a server that exits first is reported with vLLM's root cause
(read from the real CPU vLLM log of a missing worker module), not only its last traceback lines."""

from __future__ import annotations

import pytest

from byog.core.errors import ByogError
from byog.runtimes.record import tail_file, wait_for_health
from tests.support.server_logs import real_log_path


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        ("missing-worker-module", "ModuleNotFoundError: No module named 'byog_no_such_module'"),
        ("refused-flag", "vLLM refused its arguments: argument --dtype: invalid choice: 'float7'"),
    ],
)
def test_a_server_that_exits_first_is_reported_with_its_cause(log: str, cause: str) -> None:
    path = real_log_path(log)
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
