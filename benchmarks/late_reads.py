"""Late reads: does byog's cross-check name every stall that moves its TPOT off the server's own?

Launches the built-in CPU server (eager, float32 as the session server of the tests) and runs
byog's fidelity loop (``byog.bench.crosscheck.run_byog``: 8 requests, ISL = OSL = 32, C = 1) in
three ways, printing each run's mean TPOT over the server's own and what ``late_reads`` named:

- ``quiet``: nothing stopped (run it with a load beside to see what a busy box does);
- ``client``: byog's own process stopped (SIGSTOP) for ``--stall-s`` at a point of the run;
- ``front-end``: the server's API process stopped the same way (the engine goes on decoding).

The stops fall at ``--first-at`` + k x ``--every`` seconds after the run starts (prompt building
included): some land between requests and should name nothing.

    python benchmarks/late_reads.py --runs 8
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from byog.bench.crosscheck import run_byog
from byog.images.models import prepare_model
from byog.runtimes.local import LocalRuntime
from byog.schemas.plan import BUILTIN_MODEL, ModelSpec, server_config

SERVER_ARGS = ["--enforce-eager", "--dtype", "float32"]


def _stop_later(pid: int, at_s: float, stall_s: float) -> subprocess.Popen[bytes]:
    """Stop ``pid`` at ``at_s`` from now for ``stall_s`` (a shell beside it: the target may be this process)."""
    script = f"sleep {at_s}; kill -STOP {pid}; sleep {stall_s}; kill -CONT {pid}"
    return subprocess.Popen(["sh", "-c", script])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=8, help="runs per way")
    parser.add_argument("--stall-s", type=float, default=1.5)
    parser.add_argument("--first-at", type=float, default=1.2)
    parser.add_argument("--every", type=float, default=1.9)
    parser.add_argument("--ways", default="quiet,client,front-end")
    args = parser.parse_args()

    model = prepare_model(ModelSpec(path=BUILTIN_MODEL, max_model_len=4096))
    server_dir = Path(tempfile.mkdtemp(prefix="byog-late-reads-"))
    server = LocalRuntime().launch("late-reads", server_config(args=SERVER_ARGS), model, server_dir)
    front_end = server.starts[-1]["pid"]  # the API server's process
    try:
        for way in args.ways.split(","):
            print(f"\n== {way}: {args.runs} runs, stops of {args.stall_s} s" if way != "quiet" else f"\n== {way}")
            for k in range(args.runs):
                at_s = args.first_at + k * args.every
                stopper = None
                if way != "quiet":
                    stopper = _stop_later(os.getpid() if way == "client" else front_end, at_s, args.stall_s)
                run = run_byog(
                    server.endpoint.base_url, model.served_name, model.tokenizer,
                    isl=32, osl=32, concurrency=1, num_prompts=8,
                )  # fmt: skip
                if stopper is not None:
                    stopper.wait()
                ratio = run["mean_tpot_s"] / run["server_mean_tpot_s"]
                when = "" if stopper is None else f"stop at {at_s:4.1f} s  "
                print(f"{when}client / server {ratio:.4f}  named: {run['late_reads'] or 'nothing'}", flush=True)
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
