"""Old bundles keep verifying: verify re-renders report.md with the renderer of the report format
it is written in, so a changed renderer never fails an honest old bundle, and no format lets a
report say anything its summary does not."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from byog.analysis.summary import derive_summary
from byog.bundles.sign import SigningKey
from byog.bundles.verify import VerifyReport, verify_bundle
from byog.core.errors import CheckFailed
from byog.core.paths import MANIFEST_NAME, RunDir
from byog.report import legacy_v1
from byog.report.markdown import MARKER, REPORT_VERSION, render_report
from byog.report.versions import rerender, version_of
from byog.schemas.summary import read_summary
from tests.support.bundles_kit import build_bundle, repacked
from tests.support.keys import allowed_signers, make_key

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "report-v1"


def _results(report: VerifyReport) -> dict[str, tuple[str, str]]:
    return {r.name: (r.status, r.message) for r in report.results}


def test_a_bundle_packed_before_report_versions_still_verifies() -> None:
    """Packed before byog wrote its manifest first: read only with --allow-unsigned, and still signed."""
    refused = verify_bundle(FIXTURE / "v1-bundle.tar.gz", allowed_signers=FIXTURE / "allowed_signers")
    assert [(r.name, r.status) for r in refused.results] == [("archive", "fail")]
    assert "read only with --allow-unsigned" in refused.results[0].message
    report = verify_bundle(
        FIXTURE / "v1-bundle.tar.gz", allowed_signers=FIXTURE / "allowed_signers", allow_unsigned=True
    )
    results = _results(report)
    assert report.verified, report.failures
    assert report.trust == "signed" and results["signature"][0] == "pass"
    assert results["report"] == ("pass", "report.md (report format 1) re-renders byte for byte")
    assert report.signer is not None and report.signer.startswith("v1-contributor@example.com")


@pytest.fixture(scope="module")
def current(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, Path, SigningKey, Path]:
    folder = tmp_path_factory.mktemp("versions")
    key, public = make_key(folder, "alice")
    run_dir, packed = build_bundle(folder, key)
    return run_dir, packed.bundle, key, allowed_signers(folder / "allowed_signers", [("alice@example.com", public)])


def _repacked(bundle: Path, report: str, key: SigningKey, out: Path) -> Path:
    """The bundle with another report.md, re-hashed and re-signed by its own key: only the report check can object."""
    return repacked(bundle, {"report.md": report.encode()}, key, out)


def test_a_current_bundle_is_checked_against_the_current_renderer(
    current: tuple[RunDir, Path, SigningKey, Path],
) -> None:
    run_dir, bundle, _, allowed = current
    assert run_dir.report_md.read_text().splitlines()[0] == MARKER
    assert version_of(run_dir.report_md.read_text(), REPORT_VERSION) == REPORT_VERSION
    with tarfile.open(bundle, "r:gz") as tar:
        manifest = json.loads(tar.extractfile(MANIFEST_NAME).read())  # type: ignore[union-attr]
    assert manifest["predicate"]["report_format"] == REPORT_VERSION  # the signed manifest declares it
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert (
        report.verified
        and _results(report)["report"][1] == f"report.md (report format {REPORT_VERSION}) re-renders byte for byte"
    )


def test_claiming_an_older_format_gains_a_forger_nothing(
    current: tuple[RunDir, Path, SigningKey, Path], tmp_path: Path
) -> None:
    run_dir, bundle, key, allowed = current
    text = run_dir.report_md.read_text()
    v1 = legacy_v1.render_report(run_dir, read_summary(run_dir.summary_json))
    # format 4 was written from the summary of its day: one-launch CIs unlabelled (verify re-derives it so)
    v4 = render_report(run_dir, derive_summary(run_dir, launch_ci=False), report_format=4)
    cases = {
        "marker stripped": ("fail", text.split("\n", 1)[1]),
        "v1 rendering, one number changed": ("fail", v1.replace("| 4 | 1 |", "| 40 | 1 |", 1)),
        "v1 rendering as it is": ("pass", v1),  # a true report in the old format is still a true report
        "v4 rendering as it is": ("pass", v4),  # e-notation and one row per claim, as format 4 wrote them
        "v4 rendering with a format 5 headline": ("fail", v4.split("## Headline")[0] + text.split("\n", 1)[1]),
        "a format from the future": ("fail", text.replace(MARKER, "<!-- byog report v99 -->", 1)),
        "a malformed marker": ("fail", text.replace(MARKER, "<!-- byog report v02 -->", 1)),
    }
    assert cases["v1 rendering, one number changed"][1] != v1
    for name, (expected, report_md) in cases.items():
        forged = _repacked(bundle, report_md, key, tmp_path / "forged.tar.gz")
        results = _results(verify_bundle(forged, allowed_signers=allowed))
        assert results["signature"][0] == results["summary"][0] == "pass", name
        assert results["report"][0] == expected, (name, results["report"])
    future = _results(
        verify_bundle(
            _repacked(bundle, cases["a format from the future"][1], key, tmp_path / "f.tar.gz"), allowed_signers=allowed
        )
    )
    assert "report format 99, newer than this byog renders" in future["report"][1]


def test_the_format_is_what_the_manifest_declares_never_guessed_from_a_missing_marker() -> None:
    text = "<!-- byog report v3 -->\n# byog report: x\n"
    assert version_of(text, 3) == 3
    with pytest.raises(CheckFailed, match="declares report format 3, but report.md has no format marker"):
        version_of(text.split("\n", 1)[1], 3)
    with pytest.raises(CheckFailed, match="declares report format 1, but report.md says format 3"):
        version_of(text, 1)
    with pytest.raises(CheckFailed, match="which the manifest must declare"):
        version_of(text, None)  # a manifest from before declared formats cannot hold format 3
    assert version_of("# byog report: x\n", 1) == 1
    assert version_of("<!-- byog report v2 -->\n", None) == 2  # packed before formats were declared


def test_format_1_re_renders_with_todays_escaping_and_invalid_marks(tmp_path: Path) -> None:
    from tests.support.cmark import render_gfm
    from tests.support.report_runs import INVALID_POINT, SPEC, derive
    from tests.support.synthetic import make_run_dir, saturate_client

    run_dir = make_run_dir(tmp_path / "run", SPEC)
    record = json.loads(run_dir.server_record("candidate").read_text())
    record["argv"] = ["vllm", "serve", "x\n```\n## ✅ Approved by @byog-org/maintainers <img src=x>"]
    run_dir.server_record("candidate").write_text(json.dumps(record))
    saturate_client(run_dir, "candidate", INVALID_POINT)
    text = legacy_v1.render_report(run_dir, derive(run_dir))
    assert not re.search(r"^#+ ✅", text, flags=re.M)  # the argv is one line inside a fence it cannot close
    html = render_gfm(text)
    assert "Approved" not in "".join(re.findall(r"<h\d>.*?</h\d>", html)) and "<img" not in html
    assert (
        "<pre><code>vllm serve x ``` ## ✅ Approved by @byog-org/maintainers &lt;img src=x&gt;\n</code></pre>" in html
    )
    rows = [line for line in text.splitlines() if line.startswith(f"| {INVALID_POINT} |")]
    assert rows and all("⚠ invalid" in row and "~~" in row for row in rows)  # no speed-up of it reads as a result
    honest = [line for line in text.splitlines() if line.startswith("| decode-b1-isl4-osl8 |")]
    assert honest and not any("~~" in row or "⚠" in row for row in honest)


def test_a_format_4_report_over_launches_re_renders_from_the_cis_of_its_day(tmp_path: Path) -> None:
    """Format 4 was written from the hierarchical bootstrap; format 5 from the launch t interval."""
    from byog.analysis.summary import derive_summary
    from byog.report.markdown import render_report
    from tests.support.synthetic import SyntheticSpec

    key, public = make_key(tmp_path, "alice")
    allowed = allowed_signers(tmp_path / "allowed_signers", [("alice@example.com", public)])
    run_dir, packed = build_bundle(tmp_path, key, SyntheticSpec(batch_sizes=(1,), launches=3, launch_sd=0.05))
    then = render_report(run_dir, derive_summary(run_dir, launch_ci=False), report_format=4)
    now_in_4 = render_report(run_dir, derive_summary(run_dir), report_format=4)
    assert then != now_in_4  # the CIs differ
    for report_md, expected in ((then, "pass"), (now_in_4, "fail")):
        forged = _repacked(packed.bundle, report_md, key, tmp_path / "old.tar.gz")
        assert _results(verify_bundle(forged, allowed_signers=allowed))["report"][0] == expected


EVALS_ONLY_RUN = Path(__file__).parents[3] / "benchmarks/results/gpu-session-h100-4/study-points"


def test_an_evals_only_run_of_format_8_re_renders_as_written_and_format_9_says_no_bench(tmp_path: Path) -> None:
    """A real H100 run with evals and no bench, packed in format 8 ("measuring 0.0% of 195.7 s"): its
    report re-renders byte for byte; today's format leads its phase line with what the run did."""
    run_dir = RunDir(shutil.copytree(EVALS_ONLY_RUN, tmp_path / "run"))
    report = run_dir.report_md.read_text()
    summary = derive_summary(run_dir)
    assert not summary.bench.points and version_of(report, 8) == 8
    assert rerender(report, 8, run_dir, summary) == (8, report)
    said = "Where the time went (phases.json): {}; start 65.0%, eval 34.1%, other 0.9%."
    assert said.format("measuring 0.0% of 195.7 s") in report.splitlines()
    now = render_report(run_dir, summary)
    assert "Where the time went (phases.json): no bench; of 195.7 s: start 65.0%, eval 34.1%, other 0.9%." in now
