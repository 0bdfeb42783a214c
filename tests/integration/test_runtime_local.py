"""The local runtime on real CPU vLLM: no server process outlives a run, a Ctrl-C or a failed start."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from byog.core.errors import ByogError
from byog.runtimes.local import LocalRuntime
from byog.schemas.plan import server_config
from byog.schemas.server import SERVER_START_MARKER
from tests.support.processes import byog_process, interrupt, interrupt_once_started, wait_while_running

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


def vllm_processes(pgid: int) -> list[psutil.Process]:
    """Every process still in the server's process group (the API server and its engine cores)."""
    found = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid:
                found.append(process)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def starts_in(log: Path) -> int:
    return log.read_text(errors="replace").count(SERVER_START_MARKER) if log.is_file() else 0


def test_interrupted_run_stops_its_server_and_resumes_without_run_dir(tmp_path: Path) -> None:
    """Ctrl-C mid-sweep, then `byog run PLAN` again resumes that run by itself and a Ctrl-C during its
    start-up: each time no vLLM process is left (SIGTERM is the docker runtime's test; both signals
    take the one path, tests/unit/pipeline/test_interrupt.py)."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    with byog_process("run", "--plan", str(plan), cwd=tmp_path) as proc:
        wait_while_running(proc, lambda: len(list((tmp_path / "runs").glob("*/servers/only/server.json"))) == 1, "up")
        record = next((tmp_path / "runs").glob("*/servers/only/server.json"))
        output = interrupt_once_started(proc, record, signal.SIGINT)
    run_dir = record.parents[2]
    pgid = json.loads(record.read_text())["starts"][0]["pid"]
    assert proc.returncode == 130, output[-3000:]
    assert "interrupted" in output and "Traceback" not in output
    assert "only: stopping: waiting for vLLM to exit" in output, output[-3000:]
    assert "to resume: byog run --plan" not in output and f"to resume: byog run {plan}" in output, output[-3000:]
    assert vllm_processes(pgid) == []
    assert (run_dir / "plan.yaml").is_file()  # the run directory stays for a resume

    log = run_dir / "servers" / "only" / "server.log"
    with byog_process("run", str(plan), cwd=tmp_path) as proc:
        wait_while_running(proc, lambda: starts_in(log) == 2, "began a second start")
        time.sleep(5)  # vLLM is importing and loading: the interrupt lands during start-up
        leader = [p for p in psutil.Process(proc.pid).children() if p.pid == os.getpgid(p.pid)]
        output = interrupt(proc, signal.SIGINT)
    assert proc.returncode == 130, output[-3000:]
    resumed = f"resuming runs/{run_dir.name}, the newest unfinished run of plan 'interrupt' (--new starts over)"
    assert resumed in output, output[-3000:]
    assert leader and all(vllm_processes(p.pid) == [] for p in leader)
