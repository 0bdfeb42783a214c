"""The isolation pair's line on the first screen: "switch off: no measurable change" only when every
measured verdict of the pair stayed put, and what changed named otherwise."""

from __future__ import annotations

from pathlib import Path

from byog.core.safe_text import md_text
from byog.report.context import ReportContext
from byog.report.first_screen import headline
from byog.report.isolation import isolation_lines
from byog.schemas.summary import Summary
from tests.support.report_runs import derive
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

SPEC = SyntheticSpec(batch_sizes=(1, 2), eval_items=4)


def _isolation_run(tmp_path: Path) -> tuple[ReportContext, Summary]:
    text = plan_yaml(SPEC) + "pairs:\n  - {candidate: candidate, baseline: baseline, isolation: true}\n"
    run_dir = make_run_dir(tmp_path / "run", SPEC, plan_text=text)
    summary = derive(run_dir)
    return ReportContext(run_dir, summary), summary


def test_no_change_is_said_only_with_what_was_not_measured(tmp_path: Path) -> None:
    ctx, summary = _isolation_run(tmp_path)
    still = [c.model_copy(update={"label": "within noise", "within_noise": True}) for c in summary.bench.comparisons]
    calm = summary.model_copy(update={"bench": summary.bench.model_copy(update={"comparisons": still})})
    evals = calm.evals.model_copy(
        update={"verdicts": [v.model_copy(update={"verdict": "equivalent"}) for v in calm.evals.verdicts]}
    )
    calm = calm.model_copy(update={"evals": evals})
    lines = isolation_lines(ReportContext(ctx.run_dir, calm))
    assert lines[0] == "**Isolation**:"
    assert lines[2] == (
        "- ✅ switch off: no measurable change (candidate vs baseline); not measured: greedy outputs (numerics)."
    )


def test_a_point_that_moved_is_named(tmp_path: Path) -> None:
    ctx, summary = _isolation_run(tmp_path)
    first = summary.bench.comparisons[0].model_copy(update={"label": "slower", "ratio": 0.9})
    rest = [c.model_copy(update={"label": "within noise"}) for c in summary.bench.comparisons[1:]]
    moved = summary.model_copy(update={"bench": summary.bench.model_copy(update={"comparisons": [first, *rest]})})
    line = isolation_lines(ReportContext(ctx.run_dir, moved))[2]
    assert line.startswith("- ❌ switch off: changed (candidate vs baseline): ")
    assert f"{md_text(first.metric)} at {md_text(first.point_id)} 0.900×" in line
    assert "**Isolation**:" in headline(ReportContext(ctx.run_dir, moved), [])


def test_a_plan_without_an_isolation_pair_has_no_line(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SPEC)
    assert isolation_lines(ReportContext(run_dir, derive(run_dir))) == []
