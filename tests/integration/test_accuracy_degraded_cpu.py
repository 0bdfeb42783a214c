"""A deliberately degraded server through the real path: the accuracy gate must call it "different".

The degraded candidate is the real CPU vLLM with ``--hf-overrides '{"rms_norm_eps": 0.05}'`` (the
model's own epsilon is 1e-5: every RMSNorm now flattens its activations); the baseline is the
session's shared eager server, the smoke plan's baseline config. Both answer byog's generated
arithmetic (50 items, not a published benchmark). One extra server start. The degraded server
scores about 0 against stock's ~50%: at 50 items the paired difference (~-50 points) has an SE of
~7, so its 90% CI ends ~38 points below zero, far outside the task's 10-point margin.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.analysis.eval_summary import summarize_evals
from byog.core.paths import RunDir
from byog.evals.runner import run_task, write_task
from byog.plans.init_plan import CPU_SERVER_ARGS
from byog.plans.tasks import get_task
from byog.runtimes.local import LocalRuntime
from byog.schemas.plan import Plan, server_config

pytestmark = pytest.mark.integration

ITEMS = 50
DEGRADE = ["--enforce-eager", *CPU_SERVER_ARGS, "--hf-overrides", '{"rms_norm_eps": 0.05}']


def test_a_perturbed_model_is_different_from_stock(endpoint, smollm2, tmp_path: Path) -> None:
    task = get_task("arithmetic_generated")
    rd = RunDir(tmp_path)
    write_task(
        rd, "baseline", task.name, run_task(task, "baseline", endpoint, seeds=[1234], limit=ITEMS, data_dir=None)
    )
    server = LocalRuntime().launch("degraded", server_config(runtime="local", args=DEGRADE), smollm2, tmp_path / "srv")
    try:
        degraded = run_task(task, "degraded", server.endpoint, seeds=[1234], limit=ITEMS, data_dir=None)
    finally:
        server.stop()
    write_task(rd, "degraded", task.name, degraded)
    plan = Plan(
        name="degraded",
        model={"path": "m"},
        servers={"degraded": {"args": DEGRADE}, "baseline": {"args": ["--enforce-eager", *CPU_SERVER_ARGS]}},
        baseline="baseline",
        evals=[{"task": task.name, "limit": ITEMS, "passes": 1}],
        seeds=[1234],
    )
    summary = summarize_evals(rd, plan)
    scores = {s.server: s for s in summary.scores}
    (verdict,) = summary.verdicts
    print(
        f"\nbaseline {scores['baseline'].score:.1f} ± {scores['baseline'].stderr:.1f}, degraded "
        f"{scores['degraded'].score:.1f} ± {scores['degraded'].stderr:.1f}; d {verdict.d:.1f}, SE {verdict.se_d:.2f}, "
        f"90% CI [{verdict.ci90_low:.1f}, {verdict.ci90_high:.1f}], margin {verdict.margin:g}: {verdict.verdict}; "
        f"discordant {verdict.discordant}/{verdict.n}, observed re-draw {verdict.observed_redraw}, "
        f"power {verdict.observed_power}, label {verdict.screening_label}"
    )
    assert degraded.results["data"]["source"] == "generated"
    assert 0 < scores["baseline"].score < 100  # stock is neither floor nor ceiling
    assert verdict.degenerate == [] and verdict.verdict == "different"
    assert verdict.ci90_high < -verdict.margin  # worse by more than the margin, not merely not-equivalent
