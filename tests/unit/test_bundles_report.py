"""report.md is deterministic and says what a PR needs; byog report draws the plots; attach without gh."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.bundles.report import PLOTS, render_report
from byog.cli import app
from tests.unit._bundles_kit import build_bundle, make_key

runner = CliRunner()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    folder = tmp_path_factory.mktemp("report")
    key, _ = make_key(folder, "alice")
    run_dir, packed = build_bundle(folder, key)
    return run_dir, packed, key


def test_report_is_a_pure_function_of_the_run(bundle) -> None:  # noqa: ANN001
    run_dir, _, _ = bundle
    summary = json.loads(run_dir.summary_json.read_text())
    assert render_report(run_dir, summary) == render_report(run_dir, json.loads(json.dumps(summary))) == run_dir.report_md.read_text()


def test_report_has_the_matrix_verdicts_environment_and_signer(bundle) -> None:  # noqa: ANN001
    run_dir, _, key = bundle
    text = run_dir.report_md.read_text()
    summary = json.loads(run_dir.summary_json.read_text())
    comparison = next(c for c in summary["bench"]["comparisons"] if c["metric"] == "decode_tok_s")
    row = next(line for line in text.splitlines() if line.startswith(f"| {comparison['point_id']} |") and "decode tok/s" in line)
    assert f"| {comparison['ratio']:.2f}× |" in row and f"[{comparison['ci_low']:.2f}, {comparison['ci_high']:.2f}]" in row
    tpot = next(c for c in summary["bench"]["comparisons"] if c["metric"] == "tpot_s.p50")
    tpot_row = next(line for line in text.splitlines() if "TPOT P50 (ms)" in line and line.startswith(f"| {tpot['point_id']} |"))
    assert f"| {1 / tpot['ratio']:.2f}× |" in tpot_row  # a time's speed-up is baseline / candidate
    assert "## Accuracy" in text and "| candidate | gsm8k | 4 |" in text
    for verdict in summary["evals"]["verdicts"]:
        assert f"**{verdict['verdict']}**" in text
    assert "|d| ≤ 1 SE" in text and "MDE" in text
    assert "vllm serve synthetic --enforce-eager" in text and "cpu_count: 2" in text
    assert f"`{key.fingerprint()}`" in text


def test_byog_report_on_a_bundle_writes_report_and_four_plots(bundle, tmp_path: Path) -> None:  # noqa: ANN001
    run_dir, packed, _ = bundle
    out = tmp_path / "out"
    result = runner.invoke(app, ["report", str(packed.bundle), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "report.md").read_text() == run_dir.report_md.read_text()
    for name in PLOTS:
        png = out / "plots" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_byog_report_on_a_non_bundle_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.tar.gz").write_bytes(b"not a bundle")
    result = runner.invoke(app, ["report", str(tmp_path / "x.tar.gz")])
    assert result.exit_code == 1 and "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_attach_without_gh_says_exactly_what_to_do(bundle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # noqa: ANN001
    _, packed, _ = bundle
    copy = tmp_path / "bundle.tar.gz"
    shutil.copy(packed.bundle, copy)
    monkeypatch.setenv("PATH", "/usr/bin/none")
    result = runner.invoke(app, ["attach", str(copy), "--pr", "61867"])
    assert result.exit_code == 0, result.output
    assert "gh (GitHub CLI) is not installed" in result.output and "PR #61867" in result.output
    comment = (tmp_path / "bundle.tar.gz.comment.md").read_text()
    assert comment.startswith("# byog report: synthetic") and "sha256 `" in comment
