"""``CHECKS`` is the one list of verify's checks: every declared check is in it, once, after what it requires."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import byog.bundles.checks as checks_package
from byog.bundles.checks import CHECKS
from byog.bundles.checks.base import Check, check, in_order


def test_every_declared_check_runs() -> None:
    declared = set()
    for info in pkgutil.iter_modules(checks_package.__path__):
        module = importlib.import_module(f"{checks_package.__name__}.{info.name}")
        declared |= {value for value in vars(module).values() if isinstance(value, Check)}
    assert declared == set(CHECKS)
    assert [c.name for c in CHECKS][:3] == ["manifest", "signature", "hashes"]  # the gate first, then the hashes


def test_a_repeated_or_misordered_check_is_refused() -> None:
    first = check("first", gated=False, isolated=False)(lambda ctx: "ok")
    second = check("second", requires=("first",))(lambda ctx: "ok")
    assert in_order((first, second)) == (first, second)
    with pytest.raises(ValueError, match="'second' requires first, which must run before it"):
        in_order((second, first))
    with pytest.raises(ValueError, match="listed twice"):
        in_order((first, first))
