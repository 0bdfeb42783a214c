"""The synthetic run the report tests render, shared by the report, PR-comment and format-version
tests so each renders the same run: three batch sizes, and the point a test makes invalid."""

from __future__ import annotations

from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.schemas.summary import Summary
from tests.support.synthetic import SyntheticSpec, make_run_dir, saturate_client

SPEC = SyntheticSpec(batch_sizes=(1, 2, 4), isl=4, osl=8, warmup_waves=0, waves=3, eval_items=6, log_lines=2)
INVALID_POINT = "decode-b2-isl4-osl8"  # the candidate point ``invalid_run_dir`` saturates


def derive(run_dir: RunDir) -> Summary:
    """The run's summary, derived by byog and written where byog writes it (the report reads it there)."""
    summary = derive_summary(run_dir)
    atomic_write_json(run_dir.summary_json, summary.to_json())
    return summary


def invalid_run_dir(root: Path) -> tuple[RunDir, Summary]:
    """A run of SPEC at ``root`` whose candidate INVALID_POINT is client-saturated, and its summary."""
    run_dir = make_run_dir(root, SPEC)
    saturate_client(run_dir, "candidate", INVALID_POINT)
    return run_dir, derive(run_dir)
