"""The committed interleaving study on one H100 re-derives from its raw rows
(benchmarks/results/gpu-session-h100-2: ABBA, BAAB and sequential arms of one pair, back to back)."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.analysis.interleave_records import check_interleaving
from byog.analysis.summary import plan_of
from byog.analysis.wake import verdict_mismatches
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.schemas.server import SleepModeRecord
from tests.support.benchmark_scripts import run_script

pytestmark = pytest.mark.gpu_evidence

REPO = Path(__file__).resolve().parents[3]
ROOT = REPO / "benchmarks" / "results" / "gpu-session-h100-2"


@pytest.fixture(scope="module")
def table() -> str:
    return run_script("interleave_table", str(ROOT))


def test_interleaved_and_sequential_disagree_beyond_their_cis_at_b8(table: str) -> None:
    assert "decode-b8-isl128-osl128: eager 363.7 / stock 3048.3 tok/s = 0.1193, 95% CI 0.1014-0.1341" in table
    assert "decode-b8-isl128-osl128: stock 2927.3 / eager 363.1 tok/s = 8.0627, 95% CI 7.5604-8.7009" in table
    assert "decode-b8-isl128-osl128: eager 378.5 / stock 2592.4 tok/s = 0.1460, 95% CI 0.1438-0.1478" in table
    assert 0.1341 < 0.1438 and 1 / 7.5604 < 0.1438  # both interleaved upper ends below the sequential lower one
    assert table.count("flagged False") == 8 and "flagged True" not in table  # no first-wave-after-wake effect


def _interleaving_problems(root: Path) -> list[str]:
    """verify's order check of both interleaved arms of a session, recomputed from their records."""
    problems: list[str] = []
    for arm in ("study-abba", "study-baab"):
        rd = RunDir(root / arm)
        problems += check_interleaving(rd, plan_of(rd)).problems
    return problems


def _run_rows(table: str) -> list[list[str]]:
    """The time-to-verdict table's whole-run rows, one per arm, split into fields."""
    return [line.split() for line in table.splitlines() if line.startswith("    run ")]


def test_every_wake_check_matched_and_its_verdicts_recompute() -> None:
    assert _interleaving_problems(ROOT) == []
    for arm in ("study-abba", "study-baab"):
        rd = RunDir(ROOT / arm)
        for server in ("stock", "eager"):
            sleep = SleepModeRecord.model_validate(read_json(rd.server_dir(server) / "server.json")["sleep_mode"])
            woken = [f for f in sleep.fingerprints if f.wake > 0]
            assert len(woken) == 18 and all(f.verdict == "match" for f in woken)
            assert verdict_mismatches(sleep) == []
            assert {len(f.tokens) for f in woken} == {8}  # the post-wake check: the first 8 prompts


def test_the_wake_checks_are_timed_and_the_sequential_arm_has_none(table: str) -> None:
    rows = _run_rows(table)
    walls, checking = [float(r[1]) for r in rows], [float(r[6]) for r in rows]
    assert walls == [468.6, 386.6, 231.3] and checking == [151.1, 137.8, 0.0]


def test_a_level2_sleep_woken_with_reload_weights_serves_the_same_outputs() -> None:
    probe = read_json(ROOT / "wake-l2-fresh.json")
    assert probe["level"] == 2 and not probe["bare_level2_wake"]
    [server] = probe["servers"]
    assert server["reference_before_first_sleep"] and len(server["wakes"]) == 2
    assert all(w["tokens_identical"] == w["prompts"] == 32 and w["max_abs_dlogprob"] == 0 for w in server["wakes"])


SECOND = REPO / "benchmarks" / "results" / "gpu-session-h100-3"


def test_the_second_session_agrees_across_arms_and_adds_the_cold_restart_arm() -> None:
    table = run_script("interleave_table", str(SECOND))
    assert "decode-b8-isl128-osl128: eager 647.2 / stock 4718.6 tok/s = 0.1372, 95% CI 0.1301-0.1449" in table
    assert "decode-b8-isl128-osl128: eager 610.7 / stock 4375.0 tok/s = 0.1396, 95% CI 0.1264-0.1545" in table
    assert "decode-b8-isl128-osl128: eager 660.9 / stock 4581.8 tok/s = 0.1442, 95% CI 0.1210-0.1719" in table
    assert "(width 0.0508; resampled launches)" in table  # the cold-restart arm's CI holds launch variance
    rows = _run_rows(table)
    assert [float(r[1]) for r in rows] == [255.0, 257.3, 255.8, 138.7]
    assert [float(r[6]) for r in rows] == [80.2, 92.4, 0.0, 0.0]
    assert _interleaving_problems(SECOND) == []
