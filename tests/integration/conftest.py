"""Integration fixtures shared across modules: a contributor's signing key and the one smoke run.

The smoke run is README command 1 (`byog run` of the built-in smoke plan: a compiled and an eager
server, a decode sweep, GSM8K and byog's arithmetic, a signed bundle). It is made once per session
and read by every test that needs a finished smoke run directory: test_e2e_run (the run directory,
a resume that launches nothing, verify) and test_slurm_submit_cpu (the Slurm job that made it).
Where a Slurm test cluster can start (tests/support/slurm.py) the run is `byog slurm submit smoke`,
so the batch script byog writes is what produced it; elsewhere, or without Slurm on a developer's
machine, it is a plain local `byog run`. With BYOG_REQUIRE_SLURM=1 (scripts/test.sh) a Slurm that
cannot start fails the run instead of falling back.
"""

from __future__ import annotations

import os

import pytest

from tests.support.keys import ContributorKey, make_contributor_key
from tests.support.smoke import SmokeRun, local_smoke_run, submitted_smoke_run

# vLLM 0.32's AOT compile cache (its default from torch 2.10 on) cannot load what it saved on this CPU
# build ("'function' object has no attribute 'finalize_loading'", logged as "Compiling model again due
# to a load failure"), so every compiled server compiled from scratch (50-80 s of warm-up on two cores).
# Without it, Inductor's own cache (TORCHINDUCTOR_CACHE_DIR, /tmp/torchinductor_<user>) loads: a config
# started before warms up in ~15 s, ~30 s from a venv at another path (CI's). Same kernels, other cache.
os.environ.setdefault("VLLM_USE_AOT_COMPILE", "0")


@pytest.fixture(scope="session")
def signing_key(tmp_path_factory: pytest.TempPathFactory) -> ContributorKey:
    """A real OpenSSH key made for the session, and an allowed_signers file that trusts it."""
    return make_contributor_key(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="session")
def smoke_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, signing_key: ContributorKey
) -> SmokeRun:
    """The session's one smoke run, submitted through Slurm where a test cluster runs, else local."""
    from tests.support.slurm import slurm_available

    work = tmp_path_factory.mktemp("smoke")
    if slurm_available() is None or os.environ.get("BYOG_REQUIRE_SLURM") == "1":
        cluster = request.getfixturevalue("slurm_cluster")  # fails where Slurm must run and cannot
        return submitted_smoke_run(cluster, work, signing_key)
    return local_smoke_run(work, signing_key)
