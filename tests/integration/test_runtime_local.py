"""The local runtime on real CPU vLLM: no server process outlives a run, a Ctrl-C or a failed start."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import psutil
import pytest

from byog.core.errors import ByogError
from byog.runtimes.local import LocalRuntime, group_alive
from byog.schemas.plan import server_config
from tests.support.processes import byog_process, interrupt_once_started

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_failed_start_fails_fast_with_log_tail_and_leaves_nothing(smollm2, tmp_path: Path) -> None:
    config = server_config(runtime="local", args=["--enforce-eager", "--no-such-flag"])
    started = time.monotonic()
    with pytest.raises(ByogError) as err:
        LocalRuntime().launch("broken", config, smollm2, tmp_path / "servers" / "broken")
    assert time.monotonic() - started < 120  # not the 900 s health timeout
    message = str(err.value)
    assert "exited before it became healthy" in message
    assert "--no-such-flag" in message  # vLLM's own complaint, from the log tail
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if "--no-such-flag" in (p.info["cmdline"] or [])]
    assert leftovers == []


PLAN = """\
name: interrupt
model: {path: builtin:smollm2-135m-instruct, max_model_len: 4096}
servers:
  only: {runtime: local, args: ["--enforce-eager"]}
baseline: only
workloads:
  - {kind: batch, name: decode, batch_sizes: [1], isl: [32], osl: [2000], warmup_waves: 0, waves: 50}
"""


def test_interrupted_run_stops_its_server(tmp_path: Path) -> None:
    """Ctrl-C (SIGTERM is the docker runtime's test; both signals take the one path,
    tests/unit/pipeline/test_interrupt.py)."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    run_dir = tmp_path / "run"
    with byog_process("run", "--plan", str(plan), "--run-dir", str(run_dir), cwd=tmp_path) as proc:
        record = run_dir / "servers" / "only" / "server.json"
        output = interrupt_once_started(proc, record, signal.SIGINT)
    pgid = json.loads(record.read_text())["starts"][0]["pid"]
    assert proc.returncode == 130, output[-3000:]
    assert "interrupted" in output and "Traceback" not in output
    assert not group_alive(pgid)
    assert (run_dir / "plan.yaml").is_file()  # the run directory stays for a resume
