"""report.md is deterministic and says what a PR needs; byog report draws the plots; attach without gh."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.bundles.finalize import Packed
from byog.bundles.sign import SigningKey
from byog.cli import app
from byog.core.paths import RunDir
from byog.report.markdown import render_report
from byog.report.plots import PLOTS
from byog.schemas.summary import Summary, read_summary
from tests.support.bundles_kit import build_bundle
from tests.support.keys import allowed_signers, make_key

BundleKit = tuple[RunDir, Packed, SigningKey]

runner = CliRunner()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> BundleKit:
    folder = tmp_path_factory.mktemp("report")
    key, public = make_key(folder, "alice")
    run_dir, packed = build_bundle(folder, key)
    allowed_signers(folder / "allowed_signers", [("alice@example.com", public)])
    return run_dir, packed, key


def test_report_is_a_pure_function_of_the_run(bundle: BundleKit) -> None:
    run_dir, _, _ = bundle
    summary = read_summary(run_dir.summary_json)
    again = Summary.model_validate(json.loads(json.dumps(summary.to_json())))
    assert render_report(run_dir, summary) == render_report(run_dir, again) == run_dir.report_md.read_text()


def test_report_has_the_matrix_verdicts_environment_and_signer(bundle: BundleKit) -> None:
    run_dir, _, key = bundle
    text = run_dir.report_md.read_text()
    summary = json.loads(run_dir.summary_json.read_text())
    comparison = next(c for c in summary["bench"]["comparisons"] if c["metric"] == "decode_tok_s")
    decode = text.split("### decode tok/s", 1)[1]
    row = next(line for line in decode.splitlines() if line.startswith("| 1 |"))
    cell = f"| {comparison['ratio']:.2f}× [{comparison['ci_low']:.2f}, {comparison['ci_high']:.2f}] (screening) |"
    assert cell in row
    tpot = next(c for c in summary["bench"]["comparisons"] if c["metric"] == "tpot_s.p50")
    tpot_row = next(line for line in text.split("### TPOT P50 (ms)", 1)[1].splitlines() if line.startswith("| 1 |"))
    assert (
        f"| {1 / tpot['ratio']:.2f}× [{1 / tpot['ci_high']:.2f}, {1 / tpot['ci_low']:.2f}] (screening) |" in tpot_row
    )  # baseline / candidate
    assert "## Accuracy" in text and "| candidate | gsm8k | 4 |" in text
    for verdict in summary["evals"]["verdicts"]:
        assert verdict["verdict"] in text.split("## Headline", 1)[1].split("## Performance", 1)[0]
    assert "|d| ≤ 1 SE" in text.replace("\\|", "|") and "MDE" in text
    assert "`vllm serve synthetic --enforce-eager`" in text and "synthetic CPU, 2 cores, no GPU" in text
    assert f"`{key.fingerprint()}`" in text


def test_byog_report_on_a_bundle_writes_report_and_four_plots(bundle: BundleKit, tmp_path: Path) -> None:
    run_dir, packed, _ = bundle
    out = tmp_path / "out"
    allowed = packed.bundle.parent / "allowed_signers"
    result = runner.invoke(app, ["report", str(packed.bundle), "-o", str(out), "--allowed-signers", str(allowed)])
    assert result.exit_code == 0, result.output
    assert (out / "report.md").read_text() == run_dir.report_md.read_text()
    for name in PLOTS:
        png = out / "plots" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_byog_report_of_a_bundle_that_does_not_verify_writes_nothing(bundle: BundleKit, tmp_path: Path) -> None:
    _, packed, _ = bundle
    _, stranger = make_key(tmp_path, "mallory")
    allowed = allowed_signers(tmp_path / "allowed", [("mallory@example.com", stranger)])
    out = tmp_path / "out"
    result = runner.invoke(app, ["report", str(packed.bundle), "-o", str(out), "--allowed-signers", str(allowed)])
    assert (
        result.exit_code == 1
        and "does not verify, so no report was written" in result.output
        and "wrong signer" in result.output
    )
    assert not out.exists()


def test_byog_report_on_a_non_bundle_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.tar.gz").write_bytes(b"not a bundle")
    result = runner.invoke(app, ["report", str(tmp_path / "x.tar.gz")])
    assert result.exit_code == 1 and "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_attach_without_gh_says_exactly_what_to_do(
    bundle: BundleKit, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, packed, _ = bundle
    copy = tmp_path / "bundle.tar.gz"
    shutil.copy(packed.bundle, copy)
    monkeypatch.setenv("PATH", "/usr/bin/none")
    allowed = packed.bundle.parent / "allowed_signers"
    result = runner.invoke(app, ["attach", str(copy), "--pr", "61867", "--allowed-signers", str(allowed)])
    assert result.exit_code == 3, result.output  # something this machine lacks; the comment is still written
    assert "gh (GitHub CLI) is not installed" in result.output and "PR #61867" in result.output
    assert "gh pr comment 61867 --body-file" in result.output
    assert "its subject was not checked" in result.output  # no --repo and no gh to ask
    comment = (tmp_path / "bundle.tar.gz.comment.md").read_text()
    assert comment.splitlines()[0] == "## byog verify: ✅ verified" and "sha256 `" in comment
    assert "Signed by `alice@example.com (SHA256:" in comment  # a code span: no mention, no link
    assert "### Headline" in comment and "<details><summary>Full report" in comment


def test_attach_refuses_a_bundle_that_does_not_verify_and_posts_nothing(
    bundle: BundleKit, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, packed, _ = bundle
    copy = tmp_path / "bundle.tar.gz"
    shutil.copy(packed.bundle, copy)
    _, stranger = make_key(tmp_path, "mallory")
    monkeypatch.setenv("PATH", "/usr/bin/none")
    allowed = allowed_signers(tmp_path / "allowed", [("mallory@example.com", stranger)])
    result = runner.invoke(
        app, ["attach", str(copy), "--pr", "7", "--repo", "octo/repo", "--allowed-signers", str(allowed)]
    )
    assert (
        result.exit_code == 1
        and "does not verify, so nothing was posted" in result.output
        and "wrong signer" in result.output
    )
    assert not (tmp_path / "bundle.tar.gz.comment.md").exists()
    good = packed.bundle.parent / "allowed_signers"
    result = runner.invoke(
        app, ["attach", str(copy), "--pr", "7", "--repo", "octo/repo", "--allowed-signers", str(good)]
    )
    assert result.exit_code == 1 and "names no subject" in result.output  # packed without --for: could be for anything
