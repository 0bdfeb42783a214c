"""Fixtures the report tests share."""

from __future__ import annotations

import pytest

from byog.core.paths import RunDir
from byog.schemas.summary import Summary
from tests.support.report_runs import invalid_run_dir


@pytest.fixture(scope="module")
def invalid_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, Summary]:
    """The report tests' synthetic run with its candidate INVALID_POINT client-saturated (made per module)."""
    return invalid_run_dir(tmp_path_factory.mktemp("invalid") / "run")
