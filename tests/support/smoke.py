"""The session's smoke run, as tests read it (fixtures: tests/integration/conftest.py; its signing
key: tests/support/keys.py)."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import byog, byog_env
from tests.support.keys import ContributorKey

# A guard against a hung run, not a judgement of its speed: on a two-core box without AVX-512 the smoke
# run took 475 s in float32 and ~23 min when its servers ran vLLM's CPU default bf16 (emulated there: two
# GSM8K evals of ~250 s each, a 1,000-token prefill ~40 s); the limit stays above the bf16 figure.
# The tests that may set the fixture up (pytest-timeout counts its setup) carry SMOKE_TEST_TIMEOUT_S,
# above it, so the fixture cancels the job itself and says so.
SMOKE_JOB_TIMEOUT_S = 2400
SMOKE_TEST_TIMEOUT_S = SMOKE_JOB_TIMEOUT_S + 300
# The test cluster runs nothing else when the smoke job is submitted: a job pending this long waits on
# a node that will not come back (drained, down), and the run says why instead of waiting out the limit.
SMOKE_PENDING_LIMIT_S = 180
SMOKE_UNREADABLE_LIMIT_S = 120
ACTIVE_JOB_STATES = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")


@dataclass(frozen=True)
class SmokeRun:
    run_dir: Path
    returncode: int  # byog run's exit status; under Slurm 0 when the job ended COMPLETED
    output: str  # what `byog run` printed (under Slurm: the job's output file)
    via: str  # "slurm" or "local"
    submitted: str = ""  # `byog slurm submit`'s own output: the batch script and the job id
    job_id: str = ""
    job_state: str = ""


def slurm_job_state(cluster, job_id: str) -> str | None:
    """The job's state, or None when slurmctld did not answer (on a loaded box ``scontrol`` can time
    out): not knowing is not an end, so the caller polls again."""
    try:
        shown = cluster.run("scontrol", "show", "job", job_id, "--oneliner", check=False).stdout
    except subprocess.TimeoutExpired:
        return None
    found = re.search(r"JobState=(\S+)", shown)
    return found.group(1) if found else None


def wait_for_job(cluster, job_id: str) -> tuple[str, str]:
    """Poll until the job ends: (its last state, why it was cancelled or ""). A job still active at the
    limit, pending on an idle cluster, or whose state stays unreadable is cancelled, so nothing it
    started outlives the fixture and slows the tests after it."""
    deadline = time.monotonic() + SMOKE_JOB_TIMEOUT_S
    pending_since = answered = time.monotonic()
    state = "UNKNOWN"
    while True:
        now = time.monotonic()
        seen = slurm_job_state(cluster, job_id)
        if seen is not None:
            state, answered = seen, now
            if state not in ACTIVE_JOB_STATES:
                return state, ""
            if state != "PENDING":
                pending_since = now
        stuck = ""
        if now - answered > SMOKE_UNREADABLE_LIMIT_S:
            stuck = f"state unreadable for {SMOKE_UNREADABLE_LIMIT_S} s (last {state})"
        elif state == "PENDING" and now - pending_since > SMOKE_PENDING_LIMIT_S:
            stuck = f"pending for {SMOKE_PENDING_LIMIT_S} s with an idle queue"
        elif now > deadline:
            stuck = f"still {state} after {SMOKE_JOB_TIMEOUT_S} s"
        if stuck:
            cluster.run("scancel", job_id, check=False)
            return state, f"{stuck}: {cluster.diagnosis()}"
        time.sleep(2)


def submitted_smoke_run(cluster, work: Path, key: ContributorKey) -> SmokeRun:
    run_dir = work / "run"
    env = byog_env(**cluster.env, signing_key=key.key)
    started = time.monotonic()
    out = byog("slurm", "submit", "smoke", "--partition", "debug", "--run-dir", str(run_dir), cwd=work, env=env)
    submitted = out.stdout + out.stderr
    found = re.search(r"submitted Slurm job (\d+)", out.stdout)
    if out.returncode != 0 or found is None:
        return SmokeRun(run_dir, out.returncode or 1, submitted, "slurm", submitted)
    job_id = found.group(1)
    state, stuck = wait_for_job(cluster, job_id)
    log = run_dir / f"slurm-{job_id}.out"
    output = log.read_text() if log.is_file() else "(no job output)"
    print(f"\n[slurm] smoke run: job {job_id} {state} after {time.monotonic() - started:.1f} s")
    if stuck:
        print(f"[slurm] smoke job {job_id} cancelled, {stuck}")
        submitted += f"\n[slurm] job {job_id} cancelled, {stuck}"
    return SmokeRun(run_dir, 0 if state == "COMPLETED" else 1, output, "slurm", submitted, job_id, state)


def local_smoke_run(work: Path, key: ContributorKey) -> SmokeRun:
    run = byog(
        "run", "--run-dir", str(work / "run"), cwd=work, env=byog_env(signing_key=key.key), timeout=SMOKE_JOB_TIMEOUT_S
    )
    return SmokeRun(work / "run", run.returncode, run.stdout + run.stderr, "local")
