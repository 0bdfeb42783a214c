"""The committed GPU run of operating-point evals (benchmarks/results/gpu-session-h100-4) re-derives from
its raw records: each item ran in the stratum its hash assigns, and the per-stratum verdicts and "accuracy
depends on the batch" are what the README states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.analysis.strata import stratum_problems
from byog.analysis.summary import derive_summary, plan_of
from byog.bundles.checks.recompute import first_difference
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.report.markdown import render_report
from byog.schemas.summary import as_of_version

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


def test_each_stratum_carries_the_batch_both_servers_counted_and_the_committed_files_still_agree() -> None:
    summary = derive_summary(RUN)
    measured = {
        v.task: [(s.operating_point, s.candidate_tokens_per_step, s.baseline_tokens_per_step) for s in v.strata.strata]
        for v in summary.evals.verdicts
        if v.strata is not None
    }
    # eager (the candidate) and stock (the baseline): output tokens / engine steps over each stratum
    assert measured == {
        "arithmetic_generated": [(1, 1.0, 1.0), (64, 910 / 28, pytest.approx(960 / 37))],
        "gsm8k": [(1, 1.0, 1.0), (64, pytest.approx(3087 / 259), pytest.approx(2517 / 260))],
    }
    # packed before strata carried it: summary schema 13 and report format 8, which still re-derive exactly
    shipped = read_json(RUN.summary_json)
    recomputed = json.loads(json.dumps(summary.to_json()))
    assert shipped["schema_version"] == 13
    assert first_difference(as_of_version(shipped, 13), as_of_version(recomputed, 13), "summary") is None
    assert render_report(RUN, summary, report_format=8) == RUN.report_md.read_text()
