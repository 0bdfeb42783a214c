"""The session's smoke run and signing key, as tests read them (fixtures: tests/integration/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SMOKE_JOB_TIMEOUT_S = 2400
ACTIVE_JOB_STATES = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")


@dataclass(frozen=True)
class SigningKey:
    """A real OpenSSH key made for the session, and an allowed_signers file that trusts it."""

    key: Path
    allowed_signers: Path


@dataclass(frozen=True)
class SmokeRun:
    run_dir: Path
    returncode: int  # byog run's exit status; under Slurm 0 when the job ended COMPLETED
    output: str  # what `byog run` printed (under Slurm: the job's output file)
    via: str  # "slurm" or "local"
    submitted: str = ""  # `byog slurm submit`'s own output: the batch script and the job id
    job_id: str = ""
    job_state: str = ""


def byog_env(**extra: str) -> dict[str, str]:
    """The environment byog runs in: the tests' own, wide enough that tables are not wrapped."""
    return {**os.environ, "COLUMNS": "200", **extra}


def byog_cli(*args: str, cwd: Path, env: dict[str, str], timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "byog", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def slurm_job_state(cluster, job_id: str) -> str:
    shown = cluster.run("scontrol", "show", "job", job_id, "--oneliner", check=False).stdout
    found = re.search(r"JobState=(\S+)", shown)
    return found.group(1) if found else "UNKNOWN"


def submitted_smoke_run(cluster, work: Path, key: SigningKey) -> SmokeRun:
    run_dir = work / "run"
    env = byog_env(**cluster.env, BYOG_SIGNING_KEY=str(key.key))
    started = time.monotonic()
    out = byog_cli("slurm", "submit", "smoke", "--partition", "debug", "--run-dir", str(run_dir), cwd=work, env=env)
    submitted = out.stdout + out.stderr
    found = re.search(r"submitted Slurm job (\d+)", out.stdout)
    if out.returncode != 0 or found is None:
        return SmokeRun(run_dir, out.returncode or 1, submitted, "slurm", submitted)
    job_id = found.group(1)
    deadline = time.monotonic() + SMOKE_JOB_TIMEOUT_S
    while (state := slurm_job_state(cluster, job_id)) in ACTIVE_JOB_STATES:
        if time.monotonic() > deadline:
            cluster.run("scancel", job_id, check=False)
            break
        time.sleep(2)
    log = run_dir / f"slurm-{job_id}.out"
    output = log.read_text() if log.is_file() else "(no job output)"
    print(f"\n[slurm] smoke run: job {job_id} {state} after {time.monotonic() - started:.1f} s")
    return SmokeRun(run_dir, 0 if state == "COMPLETED" else 1, output, "slurm", submitted, job_id, state)


def local_smoke_run(work: Path, key: SigningKey) -> SmokeRun:
    run = byog_cli("run", "--run-dir", str(work / "run"), cwd=work, env=byog_env(BYOG_SIGNING_KEY=str(key.key)))
    return SmokeRun(work / "run", run.returncode, run.stdout + run.stderr, "local")


def make_signing_key(folder: Path) -> SigningKey:
    key = folder / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "contributor", "-f", str(key)], check=True)
    allowed = folder / "allowed_signers"
    allowed.write_text(f'contributor@example.com namespaces="byog-bundle@v1" {(folder / "id_ed25519.pub").read_text()}')
    return SigningKey(key, allowed)
