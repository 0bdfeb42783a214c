"""`byog run`'s closing table says what report.md says about every point: an invalid one's ratio
is struck through and marked, with its reasons, in both."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from byog.cli.console_reporter import ConsoleReporter
from byog.pipeline.run import print_outcome, server_work_done
from byog.plans.load import parse_plan
from byog.report.markdown import render_report
from byog.schemas.summary import read_summary
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
