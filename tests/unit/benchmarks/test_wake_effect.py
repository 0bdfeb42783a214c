"""The committed wake-effect table (benchmarks/wake_effect.py) re-derives from the runs' raw rows, and it is
the evidence for the default wake warm-up (docs/interleave.md): none flagged with one wave, one without."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.schemas.plan import ComparisonPair
from tests.support.benchmark_scripts import run_script

pytestmark = pytest.mark.gpu_evidence

REPO = Path(__file__).resolve().parents[3]


def test_the_committed_table_is_what_the_records_give_and_backs_the_default_warm_up() -> None:
    out = run_script("wake_effect")
    assert out == (REPO / "benchmarks" / "results" / "wake-effect.md").read_text(encoding="utf-8")
    h100, h200 = out.split("### benchmarks/results/h200-interleave/interleaved")
    # the H100 study woke with the default warm-up: no side at any point ran at another speed after a wake
    default = ComparisonPair.model_fields["wake_warmup_waves"].default
    assert h100.count(f"| {default} | yes |") == 4 and "| True |" not in h100
    # the H200 run before wake warm-ups: eager's first wave after a wake at B=8 was 8 % slower
    assert "| eager | decode-b8-isl128-osl128 | 0 | no | 4/4 | 0.920 | 0.853–0.984 | True |" in h200
