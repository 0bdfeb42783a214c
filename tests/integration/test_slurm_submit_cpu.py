"""`byog slurm submit` on the session's real Slurm cluster, to a bundle that verifies.

The batch script byog writes is what Slurm runs: `byog run smoke --run-dir RUN` inside the job, on
one node, signed with the session's contributor key. That job is the session's one smoke run
(tests/integration/conftest.py), so the submission costs no run of its own: test_e2e_run reads its
run directory, this module what Slurm did (the job ends COMPLETED, its output says it signed, the
bundle verifies). A partition Slurm does not have is refused first, in one sentence, before
anything is written or submitted.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli import byog, byog_env
from tests.support.keys import ContributorKey
from tests.support.smoke import SMOKE_TEST_TIMEOUT_S, SmokeRun

pytestmark = [pytest.mark.integration, pytest.mark.slurm, pytest.mark.timeout(SMOKE_TEST_TIMEOUT_S)]


def test_a_partition_slurm_lacks_is_refused(slurm_cluster, tmp_path: Path) -> None:
    env = {**os.environ, **slurm_cluster.env}
    run_dir = tmp_path / "run"
    out = byog(
        "slurm",
        "submit",
        "smoke",
        "--partition",
        "gpu-nope",
        "--run-dir",
        str(run_dir),
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Slurm has no partition 'gpu-nope' (it has debug)" in out.stdout + out.stderr
    assert not run_dir.exists() and slurm_cluster.run("squeue", "--noheader").stdout.strip() == ""


def test_submit_of_the_smoke_plan_runs_to_a_bundle_that_verifies(
    slurm_cluster, smoke_run: SmokeRun, signing_key: ContributorKey
) -> None:
    """The session's smoke run is this submission (tests/integration/conftest.py): test_e2e_run
    checks what the run directory holds; here, what Slurm did with the script byog wrote."""
    assert smoke_run.via == "slurm"
    assert "#SBATCH --nodes=1" in smoke_run.submitted and "#SBATCH --exclusive" in smoke_run.submitted
    assert smoke_run.job_id, smoke_run.submitted[-3000:]
    assert smoke_run.job_state == "COMPLETED", f"{smoke_run.job_state}: {smoke_run.output[-3000:]}"
    assert "signed with key SHA256:" in smoke_run.output
    env = byog_env(**slurm_cluster.env)
    bundle = smoke_run.run_dir / "bundle.tar.gz"
    checked = byog(
        "verify",
        str(bundle),
        "--allowed-signers",
        str(signing_key.allowed_signers),
        env=env,
        cwd=bundle.parent,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "contributor@example.com" in checked.stdout
