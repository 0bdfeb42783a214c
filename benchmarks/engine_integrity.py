"""Cold and warm cost of the engine integrity check, on this host's vLLM install.

    python benchmarks/engine_integrity.py [PYTHON] [--runs N]

Runs the identity probe (``byog.runtimes.identity_probe``) as a runner sends it (``PYTHON -c``
source, no weights) against PYTHON's installed vLLM (default: this interpreter), with a fresh
cache folder: the first run re-hashes every file RECORD lists (cold), the next runs find the
cache (warm: a stat of each file, the walk for unlisted files and the start-up hooks). Prints
each run's wall seconds, the files and bytes checked, and the status. "Cold" here is the page
cache as found: the script does not drop it (that would slow every other process on the host),
so a first read from disk costs more than the figure shows; the bytes read say how much that is.
Also prints the probe without the integrity pass (``--no-integrity`` is not a probe flag: the
baseline is the same probe source with ``engine_integrity`` cut out), so the check's own share shows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.runtimes import identity_probe

BASELINE_CUT = (
    '        return {**distribution_identity(dist), "integrity": engine_integrity(dist, cache_dir)}',
    "        return distribution_identity(dist)",
)


def timed(argv: list[str]) -> tuple[float, dict[str, object]]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - t0
    return seconds, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("python", nargs="?", default=sys.executable)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    source = Path(identity_probe.__file__).read_text(encoding="utf-8")
    assert BASELINE_CUT[0] in source, "the probe changed: update BASELINE_CUT"
    baseline = source.replace(*BASELINE_CUT)
    with tempfile.TemporaryDirectory() as cache:
        argv = identity_probe.probe_argv(args.python, None, None, cache)
        print(f"python {args.python}")
        for run in range(1 + args.runs):
            seconds, found = timed(argv)
            vllm = found["vllm"]
            assert isinstance(vllm, dict)
            integrity = vllm["integrity"]
            label = "warm" if integrity["cached"] else "cold"
            print(
                f"run {run}: {label} {seconds:6.2f} s  {vllm['distribution']} {vllm['version']}  "
                f"{integrity.get('files_checked', 0)} files, {integrity.get('bytes_read', 0) / 1e6:.0f} MB  "
                f"status {integrity['status']}"
            )
        for run in range(args.runs):
            seconds, _ = timed([args.python, "-c", baseline])
            print(f"probe without the integrity pass {run}: {seconds:6.2f} s")


if __name__ == "__main__":
    main()
