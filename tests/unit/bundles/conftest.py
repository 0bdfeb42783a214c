"""Fixtures the bundles tests share."""

from __future__ import annotations

import pytest

from tests.support.hostile import Kit


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    """The hostile-bundle kit (a trusted key, a stranger's, an honest run): made once per module."""
    return Kit.create(tmp_path_factory.mktemp("hostile"))
