"""The committed H200 interleaved run re-derives from its raw rows (benchmarks/results/h200-interleave)."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.schemas.bench import read_request_rows
from tests.support.benchmark_scripts import run_script

pytestmark = pytest.mark.gpu_evidence

REPO = Path(__file__).resolve().parents[3]
ROOT = REPO / "benchmarks" / "results" / "h200-interleave"
ABBA = ["A", "B", "B", "A"] * 4  # 8 waves a side, a swap at every change of side


def test_every_point_ran_in_abba_waves_and_every_swap_is_recorded() -> None:
    rd = RunDir(ROOT / "interleaved")
    for point in ("decode-b1-isl128-osl128", "decode-b8-isl128-osl128"):
        sides: dict[int, str] = {}
        for server in ("stock", "eager"):
            for row in read_request_rows(rd.bench_rows(server, point)):
                assert row.interleave_seq is not None and row.interleave_side is not None
                sides.setdefault(row.interleave_seq, row.interleave_side)
                assert sides[row.interleave_seq] == row.interleave_side  # one side per wave slot
        assert [sides[seq] for seq in sorted(sides)] == ABBA
    for server, side in (("stock", "A"), ("eager", "B")):
        sleep = read_json(rd.server_dir(server) / "server.json")["sleep_mode"]
        assert sleep["side"] == side and len(sleep["swaps"]) == 9
        assert all(0 < s["sleep_s"] < 1.0 and 0 < s["wake_s"] < 1.0 for s in sleep["swaps"])
        assert sleep["asleep_gpu_used_bytes"] < sleep["awake_gpu_used_bytes"] / 10
        for task, items in (("gsm8k", 50), ("arithmetic_generated", 200)):  # the evals went through the swaps too
            assert read_json(rd.eval_results(server, task))["n_items"] == items


def test_the_table_prints_the_block_bootstrap_ratio_beside_the_sequential_run() -> None:
    out = run_script("interleave_table", str(ROOT))
    assert "decode-b1-isl128-osl128: eager 55.9 / stock 480.5 tok/s = 0.1164, 95% CI 0.1027-0.1352" in out
    assert "(width 0.0325; resampled ABBA blocks)" in out
    assert "decode-b1-isl128-osl128: eager 62.1 / stock 482.2 tok/s = 0.1288, 95% CI 0.1150-0.1447" in out
    assert "resampled waves" in out
    # the one wake-up effect of the run: eager's woken B=8 waves decode 8 % slower than its continued ones
    assert "wake-up check eager decode-b8-isl128-osl128: woken/continued waves 4/4, decode ratio 0.920" in out
    assert out.count("flagged True") == 1


def test_the_h200_run_took_turns_as_its_records_show() -> None:
    """Real vLLM sleep/wake on an H200: the records (rows' times, both servers' swaps) show ABBA, so the
    summary's paired bootstrap stands on them; the sequential run's rows carry no labels to check."""
    from byog.analysis.interleave_records import check_interleaving
    from byog.analysis.summary import plan_of
    from byog.analysis.time_to_verdict import check_records

    for sub, held in (("interleaved", 4), ("sequential", 0)):
        rd = RunDir(ROOT / sub)
        plan = plan_of(rd)
        found = check_interleaving(rd, plan)
        assert found.problems == [] and len(found.held) == held and check_records(rd, plan) == []
