"""`byog check numerics` over fake servers: what it launches and what it concludes."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.errors import CheckFailed
from byog.pipeline import check
from tests.support import flat_baseline
from tests.support.fake_launch import launch_fakes
from tests.support.reporter import RecordingReporter


def test_check_numerics_never_launches_what_a_flat_baseline_makes_insensitive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flat baseline's control, variant and candidate are said to be skipped and never launched;
    the check fails on the candidate's "insensitive" (no evidence is not equivalence)."""
    rd = flat_baseline.new_run_dir(tmp_path / "run")
    reporter = RecordingReporter()
    with flat_baseline.fakes() as made:
        launched = launch_fakes(monkeypatch, made, check)
        with pytest.raises(CheckFailed, match=r"^numerics: dummy-compiled: insensitive$"):
            check.check_plan(None, rd.root, reporter, "numerics")
        flat_baseline.assert_only_the_flat_baselines_work_skipped(rd, made)
    assert launched == ["stock", "dummy", "stock.control", "stock.variant", "cand"]
    said = "\n".join(reporter.lines)
    for name in flat_baseline.SKIPPED:
        assert f"{name}: not launched: its baseline 'dummy' is insensitive" in said
