"""`byog slurm submit` of a one-server plan on the session's real Slurm cluster, to a bundle that verifies.

The batch script byog writes is what Slurm runs: `byog run PLAN --run-dir RUN` inside the job, on
one node, signed with a key made for this test. The job ends COMPLETED and its run directory holds
a bundle `byog verify` accepts. A partition Slurm does not have is refused first, in one sentence,
before anything is written or submitted. The plan is the smallest that makes a bundle (one eager
server, one point, a few eval items): the smoke plan's two servers and 420 eval items run in
test_e2e_run already, and here would add minutes of CI for nothing Slurm does.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def byog(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "byog", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def job_state(cluster, job_id: str) -> str:
    shown = cluster.run("scontrol", "show", "job", job_id, "--oneliner", check=False).stdout
    found = re.search(r"JobState=(\S+)", shown)
    return found.group(1) if found else "UNKNOWN"


def test_a_partition_slurm_lacks_is_refused(slurm_cluster, tmp_path: Path) -> None:
    env = {**os.environ, **slurm_cluster.env}
    run_dir = tmp_path / "run"
    out = byog("slurm", "submit", "smoke", "--partition", "gpu-nope", "--run-dir", str(run_dir), env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Slurm has no partition 'gpu-nope' (it has debug)" in out.stdout + out.stderr
    assert not run_dir.exists() and slurm_cluster.run("squeue", "--noheader").stdout.strip() == ""


ONE_SERVER_PLAN = """\
name: slurm-one-server
model: {path: builtin:smollm2-135m-instruct, max_model_len: 2048}
servers:
  eager: {runtime: local, args: [--enforce-eager]}
baseline: eager
workloads:
  - {kind: batch, name: decode, batch_sizes: [1], isl: [16], osl: [16], warmup_waves: 1, waves: 2}
evals:
  - {task: arithmetic_generated, limit: 10, passes: 1}
seeds: [1234]
"""


def test_submit_of_a_plan_runs_to_a_bundle_that_verifies(slurm_cluster, tmp_path: Path) -> None:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "contributor", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    public = (tmp_path / "id_ed25519.pub").read_text()
    allowed.write_text(f'contributor@example.com namespaces="byog-bundle@v1" {public}')
    env = {**os.environ, **slurm_cluster.env, "BYOG_SIGNING_KEY": str(key), "COLUMNS": "200"}
    run_dir = tmp_path / "run"
    plan = tmp_path / "plan.yaml"
    plan.write_text(ONE_SERVER_PLAN)
    t0 = time.monotonic()
    out = byog("slurm", "submit", str(plan), "--partition", "debug", "--run-dir", str(run_dir), env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "#SBATCH --nodes=1" in out.stdout and "#SBATCH --exclusive" in out.stdout
    job_id = re.search(r"submitted Slurm job (\d+)", out.stdout).group(1)  # type: ignore[union-attr]
    deadline = time.monotonic() + 1500
    while job_state(slurm_cluster, job_id) in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
        assert time.monotonic() < deadline, "the job did not finish in 25 min"
        time.sleep(2)
    state = job_state(slurm_cluster, job_id)
    log = run_dir / f"slurm-{job_id}.out"
    assert state == "COMPLETED", f"{state}: {log.read_text()[-3000:] if log.is_file() else '(no job output)'}"
    print(f"\n[slurm] byog slurm submit {plan.name}: job {job_id} COMPLETED after {time.monotonic() - t0:.1f} s")
    assert "signed with key SHA256:" in log.read_text()
    checked = byog("verify", str(run_dir / "bundle.tar.gz"), "--allowed-signers", str(allowed), env=env, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "contributor@example.com" in checked.stdout
