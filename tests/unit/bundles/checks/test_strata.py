"""verify's strata check: per-stratum verdicts recompute from the per-item records; edits are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from byog.analysis.summary import derive_summary
from byog.bundles.sign import SigningKey
from byog.bundles.verify import verify_bundle
from byog.core.paths import RunDir
from byog.report.markdown import render_report
from tests.support.bundles_kit import pack_with_summary, repacked, result
from tests.support.strata import stratified_run
from tests.support.synthetic import record_server_batch


def pack(tmp_path: Path, run_dir: RunDir, edit: dict[str, Any] | None = None) -> tuple[Path, Path]:
    def forge(document: dict[str, Any]) -> None:
        document["evals"]["verdicts"][0]["strata"].update(edit or {})

    return pack_with_summary(tmp_path, run_dir, forge if edit else None)


def test_a_difference_at_64_only_verifies_and_the_report_says_accuracy_depends_on_the_batch(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path)
    strata = derive_summary(rd).evals.verdicts[0].strata
    assert strata is not None
    assert [(s.operating_point, s.verdict) for s in strata.strata] == [(1, "equivalent"), (64, "different")]
    assert strata.depends == "yes"
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert report.verified, report.failures
    assert result(report, "strata").message.startswith("1 stratified verdict(s) recompute")
    note = next(line for line in rd.report_md.read_text().splitlines() if "per operating point" in line)
    assert note.startswith("- gsm8k, candidate vs baseline: per operating point (requests in flight, which bound ")
    assert "64 vs 1: Δd -30.46, 95% CI [" in note
    assert "1: equivalent, d 0.00" in note and "64: different" in note
    assert note.endswith("accuracy depends on the batch: yes.")


def test_an_edited_stratum_verdict_is_refused(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path)
    strata = derive_summary(rd).evals.verdicts[0].strata
    assert strata is not None
    forged = [s.model_dump() | {"verdict": "equivalent"} for s in strata.strata]
    bundle, allowed = pack(tmp_path, rd, {"strata": forged, "depends": "no"})
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert result(report, "strata").message == (
        "gsm8k candidate vs baseline: the bundle states 1: equivalent, 64: equivalent; depends: no; "
        "its per-item records and plan give 1: equivalent, 64: different; depends: yes"
    )


def test_items_recorded_outside_their_stratum_are_refused(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path, moved=5)
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert result(report, "strata").message.startswith(
        "gsm8k on candidate: 5 of 400 rows ran outside their operating point's stratum (e.g. item test:"
    )


def _measured(rd: RunDir) -> RunDir:
    """Both servers' counters over each stratum, in results.json as the runner records them."""
    record_server_batch(rd, "candidate", "gsm8k", {1: (1123.0, 1123.0), 64: (910.0, 28.0)})
    record_server_batch(rd, "baseline", "gsm8k", {1: (1114.0, 1114.0), 64: (960.0, 37.0)})
    return rd


def test_the_measured_batch_verifies_and_an_edited_one_is_refused(tmp_path: Path) -> None:
    rd = _measured(stratified_run(tmp_path))
    strata = derive_summary(rd).evals.verdicts[0].strata
    assert strata is not None and strata.strata[1].candidate_tokens_per_step == 32.5
    bundle, allowed = pack(tmp_path, rd)
    assert verify_bundle(bundle, allowed_signers=allowed).verified
    forged = [s.model_dump() for s in strata.strata]
    forged[1]["candidate_tokens_per_step"] = 64.0  # "it ran at the nominal batch"
    (tmp_path / "forged").mkdir()
    bundle, allowed = pack(tmp_path / "forged", rd, {"strata": forged})
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert result(report, "summary").message == (
        "summary.json differs from the numbers recomputed from the raw rows at "
        "summary.evals.verdicts[0].strata.strata[1].candidate_tokens_per_step: shipped 64.0, recomputed 32.5"
    )


def test_a_bundle_of_summary_schema_13_and_report_format_8_still_verifies(tmp_path: Path) -> None:
    """Packed by the byog before the measured batch: its summary lacks it and its report does not say it."""
    rd = _measured(stratified_run(tmp_path))
    bundle, allowed = pack(tmp_path, rd)
    summary = derive_summary(rd)
    old_report = render_report(rd, summary, report_format=8)
    assert "server batch" not in old_report
    document = summary.to_json() | {"schema_version": 13}  # what that byog wrote: no batch in a stratum
    for stratum in document["evals"]["verdicts"][0]["strata"]["strata"]:
        del stratum["candidate_tokens_per_step"], stratum["baseline_tokens_per_step"]
    old_summary = json.dumps(document, indent=2).encode()
    alice = SigningKey(tmp_path / "alice", "test")  # pack_with_summary's signer
    changes = {"summary.json": old_summary, "report.md": old_report.encode()}
    report = verify_bundle(repacked(bundle, changes, alice, tmp_path / "old.tar.gz"), allowed_signers=allowed)
    assert report.verified, report.failures
    assert result(report, "report").message == "report.md (report format 8) re-renders byte for byte"
