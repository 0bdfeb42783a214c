"""The committed GPU run of operating-point evals (benchmarks/results/gpu-session-h100-4) re-derives from
its raw records: each item ran in the stratum its hash assigns, and the per-stratum verdicts and "accuracy
depends on the batch" are what the README states."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.analysis.strata import stratum_problems
from byog.analysis.summary import derive_summary, plan_of
from byog.core.paths import RunDir

pytestmark = pytest.mark.gpu_evidence

RUN = RunDir(Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "gpu-session-h100-4" / "study-points")


def test_every_item_ran_at_the_operating_point_its_hash_assigns() -> None:
    assert stratum_problems(RUN, plan_of(RUN)) == []


def test_the_strata_verdicts_re_derive_from_the_items() -> None:
    verdicts = {v.task: v for v in derive_summary(RUN).evals.verdicts}
    arithmetic = verdicts["arithmetic_generated"].strata
    assert arithmetic is not None and arithmetic.depends == "no"
    assert [(s.operating_point, s.n, s.verdict) for s in arithmetic.strata] == [
        (1, 109, "equivalent"),
        (64, 91, "equivalent"),
    ]
    assert arithmetic.contrasts[0].delta == pytest.approx(0.736, abs=1e-3)
    gsm8k = verdicts["gsm8k"]
    assert gsm8k.degenerate and gsm8k.strata is not None and gsm8k.strata.depends == "undetermined"
