"""Shared fixtures. Integration fixtures start the REAL CPU vLLM (SmolLM2-135M, eager mode).

One eager server is started per test session and shared (tests/support/session_server.py says
with what); tests that must kill or restart a server start their own through the same runtime.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests never reach a model or dataset hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The offline datasets byog ships (byog/datasets): what an installed byog reads by default."""
    from byog.core.settings import PACKAGED_DATASETS

    return PACKAGED_DATASETS


@pytest.fixture(scope="session")
def smollm2():  # -> PreparedModel
    from byog.images.models import prepare_model
    from byog.schemas.plan import BUILTIN_MODEL, ModelSpec

    return prepare_model(ModelSpec(path=BUILTIN_MODEL, max_model_len=4096))


@pytest.fixture(scope="session")
def eager_config():  # -> ServerConfig
    from byog.schemas.plan import server_config
    from tests.support.session_server import SESSION_SERVER_ARGS

    return server_config(runtime="local", args=SESSION_SERVER_ARGS)


@pytest.fixture(scope="session")
def cpu_server(smollm2, eager_config, tmp_path_factory) -> Iterator[object]:
    """A real CPU vLLM server (RunningServer), shared by the whole session."""
    from byog.runtimes.local import LocalRuntime

    server_dir = tmp_path_factory.mktemp("cpu_server") / "servers" / "shared"
    server = LocalRuntime().launch("shared", eager_config, smollm2, server_dir)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def endpoint(cpu_server):  # -> Endpoint
    return cpu_server.endpoint


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The real Slurm test cluster (tests/support/slurm.py): munged, slurmctld, three slurmd.

    One per session, shared by every Slurm test; skipped where Slurm cannot start, a failure
    where it must (BYOG_REQUIRE_SLURM=1, which scripts/test.sh sets after installing it).
    """
    from tests.support.slurm import slurm_available, start_cluster

    why = slurm_available()
    if why:
        if os.environ.get("BYOG_REQUIRE_SLURM") == "1":
            pytest.fail(why)
        pytest.skip(why)
    # A short root: slurmd's spool paths and munge's socket live under it.
    root = Path(tmp_path_factory.mktemp("slurm", numbered=True))
    cluster = start_cluster(root)
    started = next(cluster)
    print(f"\n[slurm] 3 nodes idle {started.started_s:.1f} s after start-up ({root})")
    try:
        yield started
    finally:
        cluster.close()
