"""Verify time against its two goals: <= 2 s in-process for a 25 MB bundle on one
core, and <= 1.0 s (median of 5) for a whole `byog verify` process on a small bundle (scipy.special included).

    python benchmarks/verify_timing.py [--repo PATH] [--runs 5]

Re-runs itself under ``taskset -c 0`` when taskset exists (one core). ``--repo`` times another
checkout's byog (e.g. the commit before a change) with this same script: its ``byog`` package and
``tests.support.synthetic`` are imported from there, and the whole-process runs get
``PYTHONPATH=PATH``.

Bundles are synthetic but realistic in shape: a batch decode sweep (B = 1..64) on two servers,
OSL 256, raw per-request rows in the real parquet format (most of the bytes), GSM8K-style eval
items, logs; signed with a fresh Ed25519 key. Verify runs with the real ``derive_summary``
(every number recomputed, report re-rendered). The whole-process runs use compiled bytecode, as an installed byog does
(``pip install`` compiles it; ``PYTHONDONTWRITEBYTECODE`` is dropped for them): compiling byog's modules from
source on every start would add ~0.1 s that no installed copy pays. Printed: the median of ``--runs`` runs of wall
seconds and of CPU seconds (this process and its children: ssh-keygen and verify's checking
child), and the min/max wall.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=HERE, help="checkout whose byog to time (default: this one)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--target-mb", type=float, default=25.0)
    return parser.parse_args()


ARGS = _args()
REPO = ARGS.repo.resolve()
sys.path.insert(0, str(REPO))

from byog.bundles.finalize import seal_and_pack
from byog.bundles.sign import SigningKey
from byog.bundles.verify import verify_bundle
from tests.support.synthetic import SyntheticSpec, make_run_dir

BASE = SyntheticSpec(
    batch_sizes=(1, 2, 4, 8, 16, 32, 64), isl=128, osl=256, warmup_waves=1, waves=1, eval_items=200, log_lines=2000
)
SMALL = SyntheticSpec(batch_sizes=(1, 2, 4), isl=128, osl=64, warmup_waves=1, waves=2, eval_items=50, log_lines=200)


def _pin_to_one_core() -> str:
    if os.environ.get("BYOG_TIMING_PINNED"):
        return "pinned to CPU 0 with taskset"
    if shutil.which("taskset"):
        env = {**os.environ, "BYOG_TIMING_PINNED": "1"}
        raise SystemExit(subprocess.call(["taskset", "-c", "0", sys.executable, *sys.argv], env=env))
    return "NOT pinned (no taskset): numbers may use more than one core"


def _cpu_s() -> float:
    usage = os.times()
    return usage.user + usage.system + usage.children_user + usage.children_system


def _build(folder: Path, spec: SyntheticSpec, key: SigningKey) -> Path:
    run_dir = make_run_dir(folder / "run", spec)
    run_dir.plots_dir.mkdir(exist_ok=True)  # no plots: they are hashed, not recomputed
    return seal_and_pack(run_dir, folder / "bundle.tar.gz", key=key).bundle


def _waves_for(target_mb: float, folder: Path, key: SigningKey) -> Path:
    """Waves per point so the bundle lands near the target size (two probes: size ~ a + b * waves)."""
    sizes = {}
    for waves in (1, 3):
        sizes[waves] = _build(folder / "probe", replace(BASE, waves=waves), key).stat().st_size
        shutil.rmtree(folder / "probe")
    per_wave = (sizes[3] - sizes[1]) / 2
    waves = max(1, round(1 + (target_mb * 1e6 - sizes[1]) / per_wave))
    return _build(folder / "big", replace(BASE, waves=waves), key)


def _row(label: str, walls: list[float], cpus: list[float], status: str) -> str:
    return (
        f"{label:<34} {statistics.median(walls):>8.3f} {statistics.median(cpus):>8.3f} "
        f"{min(walls):>8.3f} {max(walls):>8.3f}  {status}"
    )


def main() -> None:
    pinning = _pin_to_one_core()
    with tempfile.TemporaryDirectory(prefix="byog-verify-timing-") as tmp:
        folder = Path(tmp)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "timing", "-f", str(folder / "key")], check=True
        )
        public = " ".join((folder / "key.pub").read_text().split()[:2])
        allowed = folder / "allowed_signers"
        allowed.write_text(f'timing@example.com namespaces="byog-bundle@v1" {public}\n')
        key = SigningKey(folder / "key", "bench")
        big = _waves_for(ARGS.target_mb, folder, key)
        small = _build(folder / "small", SMALL, key)
        print(
            f"verify timing of {REPO}, {pinning}; python {sys.version.split()[0]}; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; median of {ARGS.runs}"
        )
        print(f"{'':<34} {'wall s':>8} {'cpu s':>8} {'min s':>8} {'max s':>8}")
        for label, bundle in (
            (f"in-process, {big.stat().st_size / 1e6:.1f} MB", big),
            (f"in-process, {small.stat().st_size / 1e6:.2f} MB", small),
        ):
            walls, cpus, status = [], [], ""
            for _ in range(ARGS.runs):
                start, start_cpu = time.perf_counter(), _cpu_s()
                report = verify_bundle(bundle, allowed_signers=allowed)
                walls.append(time.perf_counter() - start)
                cpus.append(_cpu_s() - start_cpu)
                status = "verified" if report.verified else f"NOT VERIFIED: {report.failures}"
            print(_row(label, walls, cpus, status))
        # As an installed byog runs: pip compiles the bytecode at install time (an editable install
        # on its first run), so the modules are compiled once here, not on every run.
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "byog")], check=True, capture_output=True)
        command = [sys.executable, "-m", "byog", "verify", str(small), "--allowed-signers", str(allowed)]
        walls, cpus = [], []
        subprocess.run(command, env=env, capture_output=True, check=False)  # not timed: writes any bytecode left
        for _ in range(ARGS.runs):
            start, start_cpu = time.perf_counter(), _cpu_s()
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            walls.append(time.perf_counter() - start)
            cpus.append(_cpu_s() - start_cpu)
        status = (
            "exit 0" if done.returncode == 0 else f"exit {done.returncode}: {done.stdout[-300:]} {done.stderr[-300:]}"
        )
        print(_row(f"whole process, {small.stat().st_size / 1e6:.2f} MB (bytecode)", walls, cpus, status))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    print("goals: in-process <= 2 s at 25 MB (one core); whole process <= 1.0 s (median) for a small bundle")


if __name__ == "__main__":
    main()
