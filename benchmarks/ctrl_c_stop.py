"""How long `byog run` takes to exit after one Ctrl-C, and what it leaves running (docs: issue 55).

    nice -n 10 python benchmarks/ctrl_c_stop.py [--startup-wait-s 8]

Runs the interrupt plan of tests/integration/test_runtime_local.py on the real CPU vLLM: a Ctrl-C
mid-sweep, then `byog run PLAN` again (it resumes by itself) and a Ctrl-C during that start-up.
Prints, for each, the seconds from SIGINT to byog's exit, the processes left in the server's
process group, and the resumed run's first lines.
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path

import psutil

from byog.schemas.server import SERVER_START_MARKER
from tests.integration.test_runtime_local import PLAN, starts_in, vllm_processes
from tests.support.processes import byog_process, wait_while_running


def interrupted(proc, sig: signal.Signals = signal.SIGINT) -> tuple[float, str, list[int]]:
    leaders = [p.pid for p in psutil.Process(proc.pid).children() if p.pid == os.getpgid(p.pid)]
    sent = time.monotonic()
    proc.send_signal(sig)
    output = proc.communicate(timeout=180)[0].decode()
    return time.monotonic() - sent, output, leaders


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--startup-wait-s", type=float, default=8.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="byog-ctrl-c-"))
    plan = root / "plan.yaml"
    plan.write_text(PLAN)
    with byog_process("run", str(plan), cwd=root) as proc:
        wait_while_running(proc, lambda: any((root / "runs").glob("*/servers/only/server.json")), "up")
        time.sleep(3)
        took, output, leaders = interrupted(proc)
    left = [p.pid for leader in leaders for p in vllm_processes(leader)]
    print(f"mid-sweep: exit {proc.returncode} {took:.1f} s after SIGINT; left in the server's group: {len(left)}")
    print("  last lines:", *output.strip().splitlines()[-4:], sep="\n    ")
    log = next((root / "runs").glob("*/servers/only/server.log"))
    with byog_process("run", str(plan), cwd=root) as proc:
        wait_while_running(proc, lambda: starts_in(log) == 2, "began a second start")
        time.sleep(args.startup_wait_s)
        took, output, leaders = interrupted(proc)
    left = [p.pid for leader in leaders for p in vllm_processes(leader)]
    print(f"start-up: exit {proc.returncode} {took:.1f} s after SIGINT; left in the server's group: {len(left)}")
    print("  resumed run's lines:", *output.strip().splitlines(), sep="\n    ")
    print(f"(marker {SERVER_START_MARKER!r} counted in {log})")


if __name__ == "__main__":
    main()
