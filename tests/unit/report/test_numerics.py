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
from tests.support.numerics import PLAN, write_conformance, write_server


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    rd = RunDir(tmp_path_factory.mktemp("numerics") / "run")
    atomic_write_text(rd.plan_yaml, PLAN)
    write_server(rd, "stock", "stock", noise=0.01, seed=1)
    write_server(rd, "same", "stock", noise=0.01, seed=2)
    write_server(rd, "changed", "stock", noise=0.1, seed=3)
    write_server(rd, "stock.variant", "stock", noise=0.01, seed=4)
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
    [sensitivity] = numerics.sensitivity
    assert sensitivity.sensitive and sensitivity.control == "changed" and sensitivity.variant == "stock.variant"
    assert sensitivity.control_verdict == "drifts" and sensitivity.control_distance is not None
    assert sensitivity.control_distance > numerics.tolerance.envelope_factor
    same = next(c for c in numerics.comparisons if c.candidate == "same")
    assert same.max_distance is not None and same.max_distance <= numerics.tolerance.envelope_factor
    changed = next(c for c in numerics.comparisons if c.candidate == "changed")
    assert changed.max_distance == sensitivity.control_distance
    prefill_same = next(f for f in same.families if f.family == "prefill")
    assert prefill_same.variant and [d.judged for d in prefill_same.distances] == [True, True, True, False]
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
    atomic_write_text(rd.plan_yaml, PLAN.split("numerics:")[0])
    summary = derive_summary(rd)
    assert summary.numerics is None and "numerics" not in summary.to_json()
    assert "## Numerics" not in render_report(rd, summary)


def test_without_its_control_or_with_flat_distributions_a_baseline_is_no_evidence(tmp_path: Path) -> None:
    unchecked = RunDir(tmp_path / "unchecked")
    atomic_write_text(unchecked.plan_yaml, PLAN.replace("control: {args: [--dtype, float32]}", "control: {args: []}"))
    for server, noise, seed in (("stock", 0.01, 1), ("same", 0.01, 2), ("changed", 0.1, 3), ("stock.variant", 0.01, 4)):
        write_server(unchecked, server, "stock", noise=noise, seed=seed)
    numerics = derive_summary(unchecked).numerics
    assert numerics is not None
    # no evidence of no difference; the difference the rule found stands
    assert {c.candidate: (c.verdict, c.rule_verdict) for c in numerics.comparisons} == {
        "same": ("insensitive", "numerically equivalent"),
        "changed": ("drifts", "drifts"),
    }
    assert numerics.sensitivity[0].reason == "no sensitivity control ran on this baseline"

    flat = RunDir(tmp_path / "flat")
    atomic_write_text(flat.plan_yaml, PLAN)
    write_server(flat, "stock", "stock", noise=1e-6, seed=1, scale=1e-6)
    numerics = derive_summary(flat).numerics
    assert numerics is not None
    # nothing but the baseline ran: its flat distributions make every other server moot
    assert [(c.candidate, c.verdict, c.families) for c in numerics.comparisons] == [
        ("same", "insensitive", []),
        ("changed", "insensitive", []),
    ]
    [sensitivity] = numerics.sensitivity
    assert not sensitivity.sensitive and sensitivity.head_ratio is not None and sensitivity.head_ratio < 1.0001
    assert "flat" in sensitivity.reason
    assert "**no: insensitive**" in render_report(flat, derive_summary(flat))


def test_a_drift_beside_a_weak_control_stays_drifts_and_the_headline_says_both(tmp_path: Path) -> None:
    """The control (fp16, derived) lands inside the envelope: the baseline is insensitive, so "same"
    (numerically equivalent by the rule) is no evidence, while "changed" has shown a difference."""
    weak = RunDir(tmp_path / "weak")
    # written out, as a version-1 plan has it: it reads as the menu's fp16
    atomic_write_text(
        weak.plan_yaml, PLAN.replace("control: {args: [--dtype, float32]}", "control: {args: [--dtype, float16]}")
    )
    for server, noise, seed in (
        ("stock", 0.01, 1),
        ("same", 0.01, 2),
        ("changed", 0.1, 3),
        ("stock.variant", 0.01, 4),
        ("stock.control", 0.01, 5),
    ):
        write_server(weak, server, "stock", noise=noise, seed=seed)
    summary = derive_summary(weak)
    numerics = summary.numerics
    assert numerics is not None
    [sens] = numerics.sensitivity
    assert not sens.sensitive and sens.control == "stock.control" and sens.control_verdict == "numerically equivalent"
    by = {c.candidate: c for c in numerics.comparisons}
    assert (by["changed"].verdict, by["changed"].rule_verdict) == ("drifts", "drifts")
    assert (by["same"].verdict, by["same"].rule_verdict) == ("insensitive", "numerically equivalent")
    # no env.json here, so no platform seen: fp8-kv is not offered, rope-theta runs on any RoPE model
    assert sens.control_change == "fp16" and sens.try_control == "rope-theta"
    headline = render_report(weak, summary).split("## Headline", 1)[1].split("\n## ", 1)[0]
    lines = {line.split(":", 1)[0]: line for line in headline.splitlines() if line.startswith("- Numerics")}
    control = f"the control fp16 (stock.control) landed at {sens.control_distance:.3g} envelopes, within the envelope"
    changed = lines["- Numerics, changed / stock"]
    assert f"⚠️ drifts at {by['changed'].max_distance:.3g} envelopes" in changed and control in changed
    assert "a difference that stands although the baseline is insensitive" in changed
    assert "try numerics.control: rope-theta" in changed
    same = lines["- Numerics, same / stock"]
    assert same.startswith("- Numerics, same / stock: ➖ insensitive (the rule alone: numerically equivalent")
    assert control in same and "try numerics.control: rope-theta" in same
