"""The committed CPU A/A coverage table re-prints from its raw figures (benchmarks/results/aa-cpu.json),
never re-running vLLM: runs are disjoint, and at one launch per side the old and new CI are the same."""

from __future__ import annotations

from pathlib import Path

from tests.support.benchmark_scripts import run_script

REPO = Path(__file__).resolve().parents[3]


def test_the_aa_table_re_prints_from_the_committed_figures() -> None:
    out = run_script("aa_coverage")
    assert out == (REPO / "benchmarks" / "results" / "aa-cpu.md").read_text(encoding="utf-8")
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| 1 | ") or line.startswith("| 3 | ")]
    one = [r for r in rows if r[0] == "| 1"]
    assert one and all(r[3] == r[4] for r in one)  # R = 1 without calibration: the same wave bootstrap
    assert all(int(r[2]) >= 12 for r in one)
