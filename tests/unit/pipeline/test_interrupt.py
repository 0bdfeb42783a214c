"""Ctrl-C and SIGTERM stop a real `byog run` the same way: exit 130, one line, the run directory kept.

The server is the loopback endpoint (no vLLM), since what is under test is byog's own signal path,
which every runtime shares (SIGTERM becomes KeyboardInterrupt: byog/pipeline/signals.py). What each
runtime tears down under a real interrupt is tested on real servers, one signal each:
tests/integration/test_runtime_local.py (SIGINT) and test_docker_runtime.py (SIGTERM).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from byog.bench.ceiling import server_process
from tests.support.processes import byog_process, interrupt_once_started

# a real bench against a loopback fake: its timing is this box's (scripts/test.sh runs these alone)
pytestmark = pytest.mark.serial

PLAN = """\
name: interrupt
model: {{path: fake-org/fake-model, max_model_len: 4096}}
servers:
  only: {{runtime: endpoint, url: '{url}'}}
baseline: only
workloads:
  - {{kind: batch, name: decode, batch_sizes: [1], isl: [16], osl: [2000], warmup_waves: 0, waves: 50}}
"""


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with server_process(step_s=0.01) as base_url:
        yield base_url


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_exits_130_in_one_line_and_keeps_its_run_directory(
    endpoint: str, tmp_path: Path, sig: signal.Signals
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.format(url=endpoint))
    run_dir = tmp_path / "run"
    with byog_process("run", "--plan", str(plan), "--run-dir", str(run_dir), cwd=tmp_path) as proc:
        output = interrupt_once_started(proc, run_dir / "servers" / "only" / "server.json", sig)
    assert proc.returncode == 130, output[-3000:]
    assert "interrupted" in output and "Traceback" not in output, output[-3000:]
    assert (run_dir / "plan.yaml").is_file()
    assert not list((run_dir / "bench").glob("**/*.parquet"))  # the point in flight is not recorded as measured
