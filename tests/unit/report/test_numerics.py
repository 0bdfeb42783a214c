"""summary.json's numerics part from synthetic raw rows: verdicts, recompute, report and plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.analysis.summary import derive_summary
from byog.core.io import atomic_write_text
from byog.core.paths import RunDir
from byog.report.markdown import render_report
from byog.report.numerics import NUMERICS_PLOT
from byog.report.plots import write_plots
from tests.support.numerics import write_conformance, write_server

PLAN = """\
name: numerics-synthetic
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  stock: {args: [--enforce-eager]}
  same: {}
  changed: {args: [--dtype, float32]}
baseline: stock
numerics: {max_tokens: 24}
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    rd = RunDir(tmp_path_factory.mktemp("numerics") / "run")
    atomic_write_text(rd.plan_yaml, PLAN)
    write_server(rd, "stock", "stock", noise=0.01, seed=1)
    write_server(rd, "same", "stock", noise=0.01, seed=2)
    write_server(rd, "changed", "stock", noise=0.1, seed=3)
    write_conformance(rd, "stock", failing={"max_tokens_exact": "max_tokens=17 gave 16 tokens (usage says 16)"})
    write_conformance(rd, "same")
    write_conformance(
        rd,
        "changed",
        failing={
            "longest_prompt_accepted": "HTTP 400: too long",
            "max_tokens_exact": "max_tokens=17 gave 16 tokens (usage says 16)",
        },
    )
    return rd


def test_verdicts_against_the_aa_envelope(run_dir: RunDir) -> None:
    numerics = derive_summary(run_dir).numerics
    assert numerics is not None
    verdicts = {c.candidate: c.verdict for c in numerics.comparisons}
    assert verdicts == {"same": "numerically equivalent", "changed": "drifts"}
    changed = next(c for c in numerics.comparisons if c.candidate == "changed")
    assert all(f.reasons for f in changed.families if f.verdict == "drifts")
    prefill = next(f for f in changed.families if f.family == "prefill")
    assert [b.bucket for b in prefill.candidate] == ["0-63", "64-127", "128-255", "256-511"]
    assert sum(b.positions for b in prefill.candidate) == (40 - 1) * 2 + (260 - 1)
    decode = next(f for f in changed.families if f.family == "decode")
    assert decode.candidate_divergence is not None and decode.candidate_divergence.prompts == 3
    assert changed.candidate_wall_s == 1.5 and changed.baseline_wall_s == 3.0 and changed.plain_decode_wall_s == 2.0


def test_conformance_holds_each_candidate_to_the_baseline(run_dir: RunDir) -> None:
    numerics = derive_summary(run_dir).numerics
    assert numerics is not None
    by_pair = {p.candidate: p for p in numerics.conformance}
    assert by_pair["same"].conforms
    changed = {r.check: r.outcome for r in by_pair["changed"].checks}
    assert changed == {"stop_string": "pass", "max_tokens_exact": "not held", "longest_prompt_accepted": "fail"}
    assert not by_pair["changed"].conforms


def test_summary_recomputes_to_the_same_json_and_renders(run_dir: RunDir) -> None:
    first = derive_summary(run_dir).to_json()
    assert json.dumps(first, sort_keys=True) == json.dumps(derive_summary(run_dir).to_json(), sort_keys=True)
    report = render_report(run_dir, derive_summary(run_dir))
    assert "## Numerics" in report and "**drifts**" in report and "**numerically equivalent**" in report
    assert "| changed | longest\\_prompt\\_accepted | **fail** | HTTP 400: too long |" in report
    # format 2 wrote these names unescaped: its re-render still does, so an honest format-2 bundle verifies
    assert "| changed | longest_prompt_accepted | **fail** | HTTP 400: too long |" in render_report(
        run_dir, derive_summary(run_dir), report_format=2
    )
    assert f"plots/{NUMERICS_PLOT}" in report


def test_the_plot_is_drawn(run_dir: RunDir, tmp_path: Path) -> None:
    written = write_plots(run_dir, derive_summary(run_dir), tmp_path)
    png = tmp_path / NUMERICS_PLOT
    assert png in written and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_without_numerics_has_no_numerics_key(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "run")
    atomic_write_text(rd.plan_yaml, PLAN.replace("numerics: {max_tokens: 24}\n", ""))
    summary = derive_summary(rd)
    assert summary.numerics is None and "numerics" not in summary.to_json()
    assert "## Numerics" not in render_report(rd, summary)
