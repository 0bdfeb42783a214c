"""benchmarks/eval_sequential_replay.py on the committed H200 run: the arithmetic pair stops at look 1 with
the verdict of every item, and the figure it prints is the committed one."""

from __future__ import annotations

from pathlib import Path

from tests.support.benchmark_scripts import BENCHMARKS, load_script

RUN = BENCHMARKS / "results" / "h200-interleave" / "interleaved"


def test_the_replay_stops_the_later_server_at_the_same_verdict() -> None:
    rows = load_script("eval_sequential_replay").replay(RUN, [0.5, 0.75, 1.0])
    arithmetic = next(r for r in rows if "| arithmetic_generated |" in r and "| obf |" in r)
    cells = [c.strip() for c in arithmetic.strip("|").split("|")]
    assert cells[4:] == [
        "equivalent",
        "equivalent (equivalent)",
        "1",
        "100 / 200",
        "300 / 400",
        "25%",
        "ok",
    ]
    assert arithmetic in Path(BENCHMARKS / "results" / "eval-sequential-replay.md").read_text(encoding="utf-8")
