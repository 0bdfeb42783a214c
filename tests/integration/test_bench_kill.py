"""kill -9 the real vLLM server mid-sweep: the point is marked failed, the server restarts (what was
left of its process group is gone, server.json records both starts), the sweep goes on, and a rerun
completes the failed point with no completed point lost or duplicated."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from byog.analysis.bench_summary import summarize_bench
from byog.bench.sweep import run_bench_for_server
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.plans.load import parse_plan
from byog.runtimes.local import LocalRuntime, group_alive
from byog.schemas.bench import read_request_rows

pytestmark = pytest.mark.integration

PLAN = """
name: kill
model: {path: builtin:smollm2-135m-instruct, max_model_len: 4096}
servers:
  s: {runtime: local, args: ["--enforce-eager"]}
baseline: s
workloads:
  - {kind: batch, name: decode, batch_sizes: [1, 2, 3], isl: [16], osl: [32], warmup_waves: 1, waves: 2}
remeasure: 0
"""  # remeasure 0: re-measuring a flagged point is tests/unit/bench/test_sweep.py's, not this test's
VICTIM = "decode-b2-isl16-osl32"


def _wait_for(path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout_s} s")
        time.sleep(0.05)


def test_kill_9_mid_sweep_then_rerun_completes_without_loss_or_duplicates(smollm2, tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "kill.yaml")
    run_dir = RunDir(tmp_path / "run")
    server = LocalRuntime().launch("s", plan.servers["s"], smollm2, run_dir.server_dir("s"))
    console = NullReporter()
    try:
        killed: list[int] = []

        def kill_mid_victim() -> None:
            # the victim point has started once its "before" /metrics snapshot exists; let requests flow, then kill -9
            _wait_for(run_dir.metrics_snapshot("s", VICTIM, "before"), 300)
            time.sleep(1.0)
            killed.append(server._proc.pid)
            os.kill(killed[0], signal.SIGKILL)

        # The sweep (and so the restart) runs on the main thread: the local runtime's children get
        # PR_SET_PDEATHSIG, which fires when the *thread* that started them exits.
        killer = threading.Thread(target=kill_mid_victim, daemon=True)
        killer.start()
        outcome = run_bench_for_server(plan, "s", server, run_dir, console)
        killer.join(5)
        assert killed, "the killer never fired"
        killed_pid = killed[0]

        assert outcome["failed"] == [VICTIM] and outcome["restarts"] == 1 and outcome["aborted"] is None
        assert outcome["run"] == [
            "decode-b1-isl16-osl32",
            "decode-b3-isl16-osl32",
        ]  # the sweep went on after the restart
        assert server._proc.pid != killed_pid and server.alive()
        # The restart stopped what was left of the old group before it started the new one.
        assert not group_alive(killed_pid)
        record = json.loads((run_dir.server_dir("s") / "server.json").read_text())
        assert [start["pid"] for start in record["starts"]] == [killed_pid, server._proc.pid]
        assert record["version"]["version"].startswith("0.32")
        assert record["models"]["data"][0]["id"] == smollm2.served_name
        failed = json.loads(run_dir.bench_point("s", VICTIM).read_text())
        assert failed["status"] == "failed" and failed["log_tail"]
        assert not run_dir.bench_rows("s", VICTIM).exists()
        survivors = {pid: run_dir.bench_rows("s", pid).read_bytes() for pid in outcome["run"]}

        rerun = run_bench_for_server(plan, "s", server, run_dir, console)
        assert rerun["run"] == [VICTIM] and sorted(rerun["skipped"]) == sorted(survivors), rerun
        for pid, data in survivors.items():  # completed points were neither lost nor re-measured
            assert run_dir.bench_rows("s", pid).read_bytes() == data
        for pid, b in (("decode-b1-isl16-osl32", 1), (VICTIM, 2), ("decode-b3-isl16-osl32", 3)):
            rows = read_request_rows(run_dir.bench_rows("s", pid))
            assert sorted(r.request_index for r in rows) == list(range(3 * b))  # each request exactly once
            assert all(r.error is None and r.n_out == 32 for r in rows)
        points = summarize_bench(run_dir, plan).model_dump(mode="json")["points"]
        assert [p["point_id"] for p in points] == ["decode-b1-isl16-osl32", VICTIM, "decode-b3-isl16-osl32"]
        assert all(p["metrics"] is not None for p in points)
    finally:
        server.stop()
