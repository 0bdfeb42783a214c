"""Whole-process start-up of the CLI (issue 52's goals): `byog --help` and `byog verify --help`
<= 0.25 s, `byog verify` of a small bundle <= 0.5 s, each beside `python -c 'import byog'`.

    python benchmarks/cli_startup.py [--repo PATH ...] [--runs 7]

``--repo`` times another checkout's byog (e.g. the commit before a change, unpacked with
``git archive``) with this same script; given twice or more (before, after), the runs of each command
alternate between the checkouts, so a machine whose load drifts weighs on each alike, and each
command's rows stand together. Every command runs as its own process with compiled
bytecode (as an installed byog does), pinned to one core with ``taskset`` when it exists; printed:
min and median wall seconds of ``--runs`` runs (at least 7), the same of CPU seconds (user + system of the
process and its children: what a loaded machine, where wall time is mostly waiting for a core, still
compares), and the modules of note each command left imported (pandas, pyarrow, numpy, scipy, matplotlib, vllm).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "pyarrow.compute", "numpy", "scipy", "matplotlib", "pydantic", "vllm")
# What any typer CLI pays before its first line of its own: typer, rich's help screen and, once a
# command's options are built (`a --help`), pydantic (typer builds an adapter per option). byog's
# --help figures are these plus byog's own imports.
TYPER_FLOOR = (
    "import typer\n"
    "app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)\n"
    "@app.command()\ndef a(x: int = 1) -> None: ...\n"
    "@app.command()\ndef b(y: str = '') -> None: ...\n"
    "app()\n"
)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repo", type=Path, action="append", help="checkout whose byog to time (default: this one); repeatable"
    )
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    args.runs = max(7, args.runs)
    args.repo = [path.resolve() for path in args.repo or [HERE]]
    return args


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _pinned(command: list[str]) -> list[str]:
    return ["taskset", "-c", "0", *command] if shutil.which("taskset") else command


def _small_bundle(repo: Path, folder: Path) -> tuple[Path, Path]:
    """A signed small bundle made by the timed checkout's own code (a child process, so no import is shared)."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t", "-f", str(folder / "key")], check=True)
    public = " ".join((folder / "key.pub").read_text().split()[:2])
    allowed = folder / "allowed_signers"
    allowed.write_text(f't@example.com namespaces="byog-bundle@v1" {public}\n')
    build = (
        "import sys; from pathlib import Path\n"
        "from byog.bundles.finalize import seal_and_pack\n"
        "from byog.bundles.sign import SigningKey\n"
        "from tests.support.synthetic import SyntheticSpec, make_run_dir\n"
        "folder = Path(sys.argv[1])\n"
        "spec = SyntheticSpec(batch_sizes=(1, 2), isl=64, osl=32, warmup_waves=1, waves=1, eval_items=20,\n"
        "                     log_lines=50)\n"
        "run_dir = make_run_dir(folder / 'run', spec)\n"
        "run_dir.plots_dir.mkdir(exist_ok=True)\n"
        "seal_and_pack(run_dir, folder / 'bundle.tar.gz', key=SigningKey(folder / 'key', 'bench'))\n"
    )
    subprocess.run([sys.executable, "-c", build, str(folder)], check=True, env=_env(repo), cwd=repo)
    return folder / "bundle.tar.gz", allowed


def _env(repo: Path) -> dict[str, str]:
    # Every child also runs with cwd=repo: `python -m` and `python -c` put the working directory first
    # on sys.path, so from another checkout they would time that checkout's byog, not --repo's.
    env = {**os.environ, "PYTHONPATH": str(repo), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _heavy_after(repo: Path, argv: list[str]) -> str:
    """The heavy modules left in sys.modules after running the CLI with ``argv`` in-process (verify's
    content checks too: without ``os.fork`` they run in this process, so what they import shows)."""
    probe = (
        "import os, sys, runpy\n"
        "del os.fork\n"
        f"sys.argv = ['byog', *{argv!r}]\n"
        "try:\n    runpy.run_module('byog', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules) or '-', file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=_env(repo), cwd=repo, capture_output=True, text=True, check=False
    )
    return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"


def _cases(bundle: Path, allowed: Path) -> dict[str, list[str]]:
    return {
        "python -c 'import byog'": [sys.executable, "-c", "import byog"],
        "typer floor (2-command app --help)": [sys.executable, "-c", TYPER_FLOOR, "--help"],
        "byog --help": [sys.executable, "-m", "byog", "--help"],
        "typer floor (its command a --help)": [sys.executable, "-c", TYPER_FLOOR, "a", "--help"],
        "byog verify --help": [sys.executable, "-m", "byog", "verify", "--help"],
        f"byog verify (small, {bundle.stat().st_size / 1e3:.0f} kB)": [
            sys.executable,
            "-m",
            "byog",
            "verify",
            str(bundle),
            "--allowed-signers",
            str(allowed),
        ],
    }


def _timed(command: list[str], repo: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, exit status) of one run of ``command`` against ``repo``'s byog."""
    start, start_cpu = time.perf_counter(), _children_cpu_s()
    code = subprocess.run(_pinned(command), env=_env(repo), cwd=repo, capture_output=True, check=False).returncode
    return time.perf_counter() - start, _children_cpu_s() - start_cpu, code


def main() -> None:
    args = _args()
    repos: list[Path] = args.repo
    for repo in repos:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(repo / "byog")], check=True, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="byog-startup-") as tmp:
        cases = {}
        for i, repo in enumerate(repos):
            (Path(tmp) / str(i)).mkdir()
            cases[repo] = _cases(*_small_bundle(repo, Path(tmp) / str(i)))
        print(
            f"CLI start-up of {', '.join(str(r) for r in repos)}; python {sys.version.split()[0]}; "
            f"{'taskset -c 0' if shutil.which('taskset') else 'not pinned'}; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs each"
            + ("; runs alternate between the checkouts" if len(repos) > 1 else "")
        )
        width = max(len(label) for label in cases[repos[0]]) + (6 if len(repos) > 1 else 2)
        print(f"{'':<{width}} {'min s':>7} {'median s':>9} {'cpu min':>8} {'cpu med':>8}  exit  heavy modules imported")
        for row in range(len(cases[repos[0]])):
            commands = {repo: list(cases[repo].values())[row] for repo in repos}
            for repo, command in commands.items():  # not timed: writes bytecode left
                subprocess.run(command, env=_env(repo), cwd=repo, capture_output=True, check=False)
            runs: dict[Path, list[tuple[float, float, int]]] = {repo: [] for repo in repos}
            for _ in range(args.runs):
                for repo, command in commands.items():
                    runs[repo].append(_timed(command, repo))
            for i, repo in enumerate(repos):
                command, walls, cpus = commands[repo], [r[0] for r in runs[repo]], [r[1] for r in runs[repo]]
                label = list(cases[repo])[row] + (f" [{i + 1}]" if len(repos) > 1 else "")
                heavy = _heavy_after(repo, command[3:]) if command[1] == "-m" else "-"
                print(
                    f"{label:<{width}} {min(walls):>7.3f} {statistics.median(walls):>9.3f} {min(cpus):>8.3f} "
                    f"{statistics.median(cpus):>8.3f}  {runs[repo][-1][2]:>4}  {heavy}"
                )
    if len(repos) > 1:
        print("  " + "; ".join(f"[{i + 1}] {repo}" for i, repo in enumerate(repos)))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print("goals: --help and verify --help <= 0.25 s, small verify <= 0.5 s (whole process)")


if __name__ == "__main__":
    main()
