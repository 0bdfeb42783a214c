"""The perf CI's coverage in simulation (byog.analysis.launch_coverage, docs/statistics.md §6):
the launch t interval holds 93-97% at R = 2, 3, 5 across between-launch shares 0-0.9, the old
bootstrap does not, and a calibration brings one launch per side to the same level. Fixed seeds."""

from __future__ import annotations

import pytest

from byog.analysis.launch_coverage import coverage

SHARES = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9)


@pytest.mark.parametrize("launches", [2, 3, 5])
def test_the_launch_t_interval_covers_95_percent_at_every_share(launches: int) -> None:
    got = {share: coverage(launches, 3, share, "t", trials=4000) for share in SHARES}
    assert all(0.93 <= c <= 0.97 for c in got.values()), got


def test_one_launch_per_side_beside_an_aa_baseline_borrows_its_spread() -> None:
    got = [coverage((1, 2), 3, share, "t", trials=4000) for share in (0.1, 0.9)]
    assert all(0.93 <= c <= 0.97 for c in got), got


def test_a_calibration_brings_one_launch_per_side_to_its_level() -> None:
    got = [coverage(1, 3, share, "t", trials=4000, calibration_launches=3) for share in (0.1, 0.5, 0.9)]
    assert all(0.93 <= c <= 0.97 for c in got), got


def test_the_old_bootstraps_miss_the_target_where_launches_dominate() -> None:
    """The control: the same simulation fails the CIs byog printed before."""
    one = coverage(1, 3, 0.5, "bootstrap", trials=400, resamples=200)
    three = coverage(3, 3, 0.9, "bootstrap", trials=400, resamples=200)
    assert one < 0.7 and three < 0.9, (one, three)
    assert coverage(1, 3, 0.5, "t", trials=400, resamples=200) == one  # no launch variance: the same bootstrap
