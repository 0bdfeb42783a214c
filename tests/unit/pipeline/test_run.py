"""`byog run`'s closing table says what report.md says about every point: an invalid one's ratio
is struck through and marked, with its reasons, in both; a server whose context cannot hold an eval
is stopped as soon as it says its context."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from byog.cli.console_reporter import ConsoleReporter
from byog.core.paths import RunDir
from byog.pipeline import run as run_module
from byog.pipeline.run import print_outcome, server_work_done
from byog.plans.load import parse_plan
from byog.plans.tasks import EvalDoesNotFit
from byog.report.markdown import render_report
from byog.schemas.summary import read_summary
from tests.support import flat_baseline
from tests.support.fake_launch import launch_fakes
from tests.support.fake_vllm import FakeVllm
from tests.support.reporter import RecordingReporter
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

REASON = "client saturated, event loop lag P99 6 ms over 4 ms"


def test_the_closing_table_marks_an_invalid_point_as_the_report_does(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run")
    summary = read_summary(run_dir.summary_json)
    comparisons = [c for c in summary.bench.comparisons if c.metric == "decode_tok_s"]
    flagged = comparisons[0]
    points = [
        p.model_copy(update={"valid": False, "invalid_reasons": [REASON]})
        if (p.server, p.point_id) == (flagged.baseline, flagged.point_id)
        else p
        for p in summary.bench.points
    ]
    summary = summary.model_copy(update={"bench": summary.bench.model_copy(update={"points": points})})
    out = io.StringIO()
    print_outcome(summary, ConsoleReporter(Console(file=out, force_terminal=False, width=300)))
    rows = {line.split(" | ")[1]: line for line in out.getvalue().splitlines() if line.startswith("| ")}  # pair | point
    assert f"~~{flagged.ratio:.3f}~~ ⚠" in rows[flagged.point_id]
    assert f"invalid: {flagged.baseline}: {REASON}" in rows[flagged.point_id]
    for other in comparisons[1:]:
        assert "~~" not in rows[other.point_id] and "invalid" not in rows[other.point_id]
    report = render_report(run_dir, summary)
    assert REASON in report and "~~" in report


def test_the_numerics_table_shows_an_insensitive_baseline(tmp_path: Path) -> None:
    from byog.analysis.summary import derive_summary
    from byog.core.io import atomic_write_text
    from byog.core.paths import RunDir
    from byog.pipeline.run import print_numerics
    from tests.support.numerics import write_server

    flat = RunDir(tmp_path / "flat")
    atomic_write_text(
        flat.plan_yaml,
        'name: flat\nmodel: {path: "builtin:smollm2-135m-instruct"}\n'
        "servers: {stock: {args: [--enforce-eager]}, same: {}}\nbaseline: stock\nnumerics: {max_tokens: 24}\n",
    )
    write_server(flat, "stock", "stock", noise=1e-6, seed=1, scale=1e-6)
    console = Console(record=True, width=300)
    print_numerics(derive_summary(flat), ConsoleReporter(console))
    text = console.export_text()
    assert "| same vs stock | ➖ insensitive: the baseline's next-token distributions are flat" in text
    assert "(baseline stock) | insensitive" in text


def test_a_launch_is_done_when_the_points_it_runs_are(tmp_path: Path) -> None:
    """A workload on one launch has no records on launch 2, and launch 2 is complete without them (a resumed
    run does not start the server again for points it never runs there)."""
    text = plan_yaml(SyntheticSpec(launches=2)).replace(
        "workloads:\n",
        "workloads:\n  - {kind: batch, name: longctx, launches: 1, batch_sizes: [1], isl: [512], osl: [64]}\n",
    )
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(launches=2), plan_text=text)
    plan = parse_plan(text, "plan")
    assert not run_dir.for_launch(2).bench_point("candidate", "longctx-b1-isl512-osl64").exists()
    assert all(server_work_done(plan, server, run_dir.for_launch(2)) for server in plan.servers)
    run_dir.bench_point("candidate", "longctx-b1-isl512-osl64").unlink()  # launch 1 runs it: not done without it
    assert not server_work_done(plan, "candidate", run_dir)


EVALS_ONLY = """\
name: fit
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  cand: {}
  stock: {args: [--enforce-eager]}
baseline: stock
evals:
  - {task: arithmetic_generated, limit: 2, passes: 1, gen_kwargs: {max_gen_toks: 64}}
"""


def test_a_server_whose_context_cannot_hold_an_eval_is_stopped_before_its_bench_and_the_rerun_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan states no context; 'stock' comes up saying max_model_len 100, and the plan's 64-token
    answers need 128 with byog's arithmetic prompts (64). 'cand' ran first: its records stay."""
    made = {"cand": FakeVllm(max_model_len=4096), "stock": FakeVllm(max_model_len=100)}
    benched: list[str] = []
    launch_fakes(monkeypatch, made, run_module)
    monkeypatch.setattr(run_module, "_bench", lambda plan, name, *rest: benched.append(name))
    plan = parse_plan(EVALS_ONLY, "plan.yaml")
    rd = RunDir(tmp_path / "run")
    rd.root.mkdir(parents=True)
    rd.plan_yaml.write_text(EVALS_ONLY)
    try:
        with pytest.raises(
            EvalDoesNotFit, match="server 'stock' holds at most max_model_len = 100: raise it to at least 128"
        ):
            run_module._measure(plan, rd, None, RecordingReporter())
        assert benched == ["cand"] and made["stock"].requests == []
        assert rd.eval_complete("cand", "arithmetic_generated") and not rd.eval_complete(
            "stock", "arithmetic_generated"
        )
        sent = len(made["cand"].requests)
        made["stock"].max_model_len = 128  # restarted with room for the answers
        run_module._measure(plan, rd, None, RecordingReporter())
    finally:
        for fake in made.values():
            fake.close()
    assert len(made["cand"].requests) == sent and rd.eval_complete("stock", "arithmetic_generated")
    assert {r.get("max_tokens") for r in made["stock"].requests} == {64}


def test_byog_run_never_launches_what_a_flat_baseline_makes_insensitive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run loop over fake servers: the flat baseline 'dummy' runs; its control, envelope variant
    and candidate are not launched (no servers/<name>), while the peaked baseline's all are."""
    plan = parse_plan(flat_baseline.PLAN, "plan.yaml")
    rd = flat_baseline.new_run_dir(tmp_path / "run")
    with flat_baseline.fakes() as made:
        launched = launch_fakes(monkeypatch, made, run_module)
        run_module._measure(plan, rd, None, RecordingReporter())
        flat_baseline.assert_only_the_flat_baselines_work_skipped(rd, made)
    assert launched == ["stock", "dummy", "stock.control", "stock.variant", "cand"]
