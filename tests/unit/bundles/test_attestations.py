"""attestations.intoto.jsonl: in-toto test-result statements per gate, valid under in-toto-attestation,
rebuilt by verify (an edited one fails even when re-signed), emitted with verify's own SVR."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from google.protobuf import json_format
from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement
from typer.testing import CliRunner

from byog.analysis.claims import measured
from byog.analysis.summary import derive_summary
from byog.bundles.attestations import (
    ATTESTATIONS_NAME,
    SVR,
    SVR_NAME,
    TEST_RESULT,
    WARNINGS_ATTESTED,
    attestations_bytes,
)
from byog.bundles.finalize import seal_and_pack
from byog.bundles.sign import SigningKey
from byog.bundles.verify import verify_bundle
from byog.cli import app
from byog.core.io import atomic_write_bytes, atomic_write_json
from byog.core.paths import CLAIMS_NAME, RunDir
from byog.pipeline.derive import derive_and_write
from byog.report.context import ReportContext, ReportInputs
from byog.report.markdown import REPORT_VERSION, render_report
from byog.report.setup import warning_lines
from byog.schemas.bench import WakeEffect, WakeIntegrity
from byog.schemas.claims import RatioClaim
from byog.schemas.summary import Summary, read_summary
from tests.support.bundles_kit import TINY, repacked
from tests.support.interleave_run import BATCH_PLAN, interleaved_sweep, steady_waves
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import make_run_dir


def valid_statement(line: str) -> dict:
    """One line as in-toto-attestation reads it: a Statement v1 that validates, its predicate parsed strictly."""
    doc = json.loads(line)
    proto = json_format.Parse(line, statement_pb2.Statement())  # type: ignore[attr-defined]
    Statement.copy_from_pb(proto).validate()
    if doc["predicateType"] == TEST_RESULT:
        json_format.ParseDict(doc["predicate"], test_result_pb2.TestResult())  # type: ignore[attr-defined]
    return doc


def test_statements_validate_verify_rebuilds_them_and_emits_them(tmp_path: Path) -> None:
    key, public = make_key(tmp_path, "alice")
    allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", public)])
    run_dir = make_run_dir(tmp_path / "run", TINY)
    run_dir.plots_dir.mkdir(exist_ok=True)
    data = attestations_bytes(run_dir, derive_summary(run_dir))
    atomic_write_bytes(run_dir.root / ATTESTATIONS_NAME, data)
    statements = [valid_statement(line) for line in data.decode().splitlines()]
    results = [s["predicate"]["result"] for s in statements]
    assert len(statements) >= 2 and set(results) <= {"PASSED", "WARNED", "FAILED"}
    first = statements[0]
    assert first["predicateType"] == TEST_RESULT and first["predicate"]["configuration"][0]["name"] == "plan"
    assert any(s["predicate"].get("passedTests", [""])[0].startswith("validity:") for s in statements)

    packed = seal_and_pack(run_dir, tmp_path / "bundle.tar.gz", key=key, plots=None)
    out = tmp_path / "emitted"
    result = CliRunner().invoke(
        app, ["verify", str(packed.bundle), "--allowed-signers", str(allowed), "--emit-attestations", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "attestations:" in result.output and "rebuild byte for byte" in result.output
    assert (out / ATTESTATIONS_NAME).read_bytes() == data
    svr = valid_statement((out / SVR_NAME).read_text())
    assert svr["predicateType"] == SVR and "BYOG_VERIFIED" in svr["predicate"]["properties"]
    assert svr["subject"][0]["name"] == "bundle.tar.gz"

    # The contributor edits a verdict and signs again: the statement no longer matches what the bundle gives.
    edited = data.replace(b'"result":"PASSED"', b'"result":"FAILED"', 1).replace(b'"passedTests"', b'"failedTests"', 1)
    assert edited != data
    resigned = repacked(packed.bundle, {ATTESTATIONS_NAME: edited}, key, tmp_path / "edited.tar.gz")
    report = verify_bundle(resigned, allowed_signers=allowed)
    line = 1 + next(n for n, text in enumerate(data.splitlines()) if b'"result":"PASSED"' in text)
    assert [f for f in report.failures if f.startswith("attestations:")] == [
        f"attestations: {ATTESTATIONS_NAME} line {line} differs from the statement rebuilt from the bundle"
    ]


def test_the_subject_is_the_candidates_commit_and_wheel_and_the_configuration_names_images(tmp_path: Path) -> None:
    from byog.bundles.attestations import candidate_subject, configuration

    run_dir = make_run_dir(tmp_path / "run", TINY)
    path = run_dir.server_record("candidate")
    record = json.loads(path.read_text())
    record["identity"] = {"vllm": {"version": "0.24.0", "commit": "a" * 40, "wheel_sha256": "b" * 64}}
    record["repo_digests"] = ["vllm/vllm-openai@sha256:" + "c" * 64]
    path.write_text(json.dumps(record))
    assert candidate_subject(run_dir, "candidate") == {
        "name": "vllm (candidate)",
        "digest": {"gitCommit": "a" * 40, "sha256": "b" * 64},
    }
    assert configuration(run_dir, ["candidate", "baseline"])[1] == {
        "name": "image candidate: vllm/vllm-openai",
        "digest": {"sha256": "c" * 64},
    }
    valid_statement(attestations_bytes(run_dir, derive_summary(run_dir)).decode().splitlines()[0])


def test_pair_and_engine_gates_are_statements(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    for name, integrity in (
        ("candidate", {"status": "patched", "modified": {"vllm/config.py": "f" * 64}, "modified_count": 1}),
        ("baseline", {"status": "clean", "files_checked": 3307}),
    ):
        path = run_dir.server_record(name)
        record = json.loads(path.read_text())
        record["identity"] = {"vllm": {"distribution": "vllm", "version": "0.24.0", "integrity": integrity}}
        path.write_text(json.dumps(record))
    docs = [
        valid_statement(line) for line in attestations_bytes(run_dir, derive_summary(run_dir)).decode().splitlines()
    ]
    gates = {
        next(iter(t for k in ("passedTests", "warnedTests", "failedTests") for t in d["predicate"].get(k, []))): d
        for d in docs
    }
    engine = {test: d["predicate"]["result"] for test, d in gates.items() if test.startswith("engine integrity")}
    assert engine == {
        "engine integrity candidate: patched: modified vllm/config.py": "FAILED",
        "engine integrity baseline: clean (vllm 0.24.0: 3307 files match RECORD)": "PASSED",
    }
    pairs = [(test, d["predicate"]["result"]) for test, d in gates.items() if test.startswith("pair:")]
    assert len(pairs) == 1 and pairs[0][0].startswith("pair: candidate vs baseline: unknown: cannot check")
    assert pairs[0][1] == "WARNED"


def test_emit_refuses_a_bundle_whose_integrity_is_not_established(tmp_path: Path) -> None:
    from byog.bundles.attestations import emit_refusal

    run_dir = make_run_dir(tmp_path / "run", TINY)
    run_dir.plots_dir.mkdir(exist_ok=True)
    atomic_write_bytes(run_dir.root / ATTESTATIONS_NAME, attestations_bytes(run_dir, derive_summary(run_dir)))
    packed = seal_and_pack(run_dir, tmp_path / "bundle.tar.gz", sign=False, plots=None)
    out = tmp_path / "emitted"
    result = CliRunner().invoke(
        app, ["verify", str(packed.bundle), "--allow-unsigned", "--emit-attestations", str(out)]
    )
    assert result.exit_code == 1
    assert "no attestations written: the bundle's integrity is not established (signature skip)" in result.output
    assert not out.exists()
    passing = {name: "pass" for name in ("archive", "manifest", "signature", "hashes")}
    assert emit_refusal(passing) is None
    assert emit_refusal({**passing, "hashes": "fail"}) == (
        "no attestations written: the bundle's integrity is not established (hashes fail)"
    )
    assert emit_refusal({**passing, "engine": "fail"}) is not None


def _gates(data: bytes) -> dict[str, tuple[str, str]]:
    """Each statement's gate (its name up to the first colon) -> (result, its test name)."""
    found = {}
    for line in data.decode().splitlines():
        predicate = valid_statement(line)["predicate"]
        test = next(t for k in ("passedTests", "warnedTests", "failedTests") for t in predicate.get(k, []))
        found[test.split(":", 1)[0]] = (predicate["result"], test)
    return found


@pytest.fixture(scope="module")
def woken_slow(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    """An interleaved pair (byog's Pair against two loopback fakes) whose candidate decoded at half its
    speed in the waves right after each wake: a flagged wake effect, every point valid, derived by byog."""
    rd, _ = interleaved_sweep(tmp_path_factory.mktemp("woken"), text=BATCH_PLAN)
    atomic_write_json(rd.env_json, {"schema_version": 1, "os": "Linux (synthetic)", "gpus": []})
    steady_waves(rd, "base")
    steady_waves(rd, "cand", woken=0.5)
    derive_and_write(rd.root)
    rd.plots_dir.mkdir(exist_ok=True)
    return rd


def _signed_copy(rd: RunDir, folder: Path) -> tuple[SigningKey, Path, RunDir]:
    """A signing key, the allowed-signers file that trusts it, and a copy of ``rd`` to pack."""
    key, public = make_key(folder, "alice")
    allowed = allowed_signers(folder / "allowed", [("alice@example.com", public)])
    shutil.copytree(rd.root, folder / "run")
    return key, allowed, RunDir(folder / "run")


@pytest.mark.serial  # a real interleaved bench against loopback fakes
def test_a_flagged_wake_effect_fails_validity_naming_side_and_point_and_verify_rebuilds_it(
    woken_slow: RunDir, tmp_path: Path
) -> None:
    key, allowed, rd = _signed_copy(woken_slow, tmp_path)
    summary = read_summary(rd.summary_json)
    assert [(w.server, w.flagged) for w in summary.bench.wake_effects] == [("cand", True), ("base", None)]
    assert all(p.valid for p in summary.bench.points)
    data = (rd.root / ATTESTATIONS_NAME).read_bytes()
    warning = "Wake-up flagged: cand at decode-b1-isl5-osl12 ran at 0.50× its continued speed right after waking"
    assert _gates(data)["validity"] == (
        "FAILED",
        f"validity: all 2 points valid; warning: {warning}: the pair's ratio there carries the wake-up's effect.",
    )
    assert f"- ⚠ {warning}" in rd.report_md.read_text().split("**What changed**")[0]  # the headline's warning
    packed = seal_and_pack(rd, tmp_path / "bundle.tar.gz", key=key, plots=None)
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    assert report.verified, report.failures
    rebuilt = next(r for r in report.results if r.name == "attestations")
    assert rebuilt.status == "pass" and rebuilt.details == {"statements": data.decode().splitlines()}
    assert any(line.startswith(f"warning: ⚠ {warning}") for line in report.first_screen)


@pytest.mark.serial
def test_an_older_format_bundle_still_verifies_and_verify_reissues_under_todays_rules(
    woken_slow: RunDir, tmp_path: Path
) -> None:
    key, allowed, rd = _signed_copy(woken_slow, tmp_path)
    summary = read_summary(rd.summary_json)
    old = attestations_bytes(rd, summary, report_format=WARNINGS_ATTESTED - 1)  # as format 6's byog wrote it
    assert _gates(old)["validity"] == ("PASSED", "validity: all 2 points valid")
    packed = seal_and_pack(rd, tmp_path / "bundle.tar.gz", key=key, plots=None)
    v6 = render_report(rd, summary, report_format=WARNINGS_ATTESTED - 1).encode()
    older = repacked(packed.bundle, {"report.md": v6, ATTESTATIONS_NAME: old}, key, tmp_path / "v6.tar.gz")
    report = verify_bundle(older, allowed_signers=allowed)
    assert report.verified, report.failures
    checks = {r.name: r for r in report.results}
    assert checks["report"].message == "report.md (report format 6) re-renders byte for byte"
    assert checks["attestations"].status == "pass"
    reissued = "\n".join((checks["attestations"].details or {})["statements"]).encode() + b"\n"
    assert reissued == attestations_bytes(rd, summary) and _gates(reissued)["validity"][0] == "FAILED"

    # the old rule's PASSED in a bundle that declares format 7 fails
    forged = verify_bundle(
        repacked(packed.bundle, {ATTESTATIONS_NAME: old}, key, tmp_path / "f.tar.gz"), allowed_signers=allowed
    )
    assert f"attestations: {ATTESTATIONS_NAME} line 1 differs from the statement rebuilt from the bundle" in (
        forged.failures
    )
    # packing a run whose attestations an older byog derived writes them again under the format it packs
    atomic_write_bytes(rd.root / ATTESTATIONS_NAME, old)
    again = seal_and_pack(rd, tmp_path / "again.tar.gz", key=key, plots=None)
    assert (rd.root / ATTESTATIONS_NAME).read_bytes() == attestations_bytes(rd, summary)
    assert verify_bundle(again.bundle, allowed_signers=allowed).verified


def _flagged(run_dir: RunDir, flagged: bool) -> Summary:
    summary = derive_summary(run_dir)
    point = summary.bench.points[0].point_id
    summary.bench.wake_effects = [
        WakeEffect(server="candidate", point_id=point, woken_waves=4, continued_waves=4, ratio=0.92, flagged=flagged)
    ]
    return summary


def test_the_report_warning_and_the_attestation_read_one_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    point = derive_summary(run_dir).bench.points[0].point_id
    lines = {}
    for flagged in (True, False):
        summary = _flagged(run_dir, flagged)
        ctx = ReportContext(run_dir, summary, ReportInputs(image_base=None), REPORT_VERSION)
        lines[flagged] = (warning_lines(ctx), _gates(attestations_bytes(run_dir, summary))["validity"])
    warning = f"Wake-up flagged: candidate at {point} ran at 0.92× its continued speed right after waking"
    assert lines[True][0] == [f"- ⚠ {warning}: the pair's ratio there carries the wake-up's effect."]
    assert lines[True][1][0] == "FAILED" and warning in lines[True][1][1]
    # unflagged: no warning, and the statements are those of a bundle with no wake effect at all
    assert lines[False] == ([], ("PASSED", f"validity: all {len(derive_summary(run_dir).bench.points)} points valid"))
    assert attestations_bytes(run_dir, _flagged(run_dir, False)) == attestations_bytes(run_dir, derive_summary(run_dir))
    # one home: with the caveats decided away, both the headline and the statement lose the warning
    monkeypatch.setattr("byog.report.setup.caveats", lambda *args: [])
    summary = _flagged(run_dir, True)
    assert warning_lines(ReportContext(run_dir, summary, ReportInputs(image_base=None), REPORT_VERSION)) == []
    assert _gates(attestations_bytes(run_dir, summary))["validity"][0] == "PASSED"


def test_wake_integrity_is_a_statement_a_failed_check_fails_and_format_6_has_none(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    summary = derive_summary(run_dir)
    why = "wake integrity: outputs changed after wake 3 (B=1: 32 of 32 prompts differ from before the first sleep)"
    checks = dict(candidate="candidate", baseline="baseline", why="w", wakes_checked=3, max_abs_dlogprob=0.0)
    summary.bench.wake_integrity = [WakeIntegrity(method="interleaved", wakes_matched=3, **checks)]  # type: ignore[arg-type]
    assert _gates(attestations_bytes(run_dir, summary))["wake integrity candidate vs baseline"] == (
        "PASSED",
        "wake integrity candidate vs baseline: interleaved: 3 of 3 wake checks matched",
    )
    summary.bench.wake_integrity = [
        WakeIntegrity(method="interleaved, then sequential", wakes_matched=2, changed=[why], **checks)  # type: ignore[arg-type]
    ]
    gates = _gates(attestations_bytes(run_dir, summary))
    assert gates["wake integrity candidate vs baseline"] == (
        "FAILED",
        "wake integrity candidate vs baseline: interleaved, then sequential: 2 of 3 wake checks matched; warning: "
        f"{why}: candidate vs baseline's waves since the last good fingerprint are invalid and were measured again "
        "sequentially.",
    )
    assert gates["validity"][0] == "PASSED"  # the points measured again sequentially are valid
    assert not any(g.startswith("wake") for g in _gates(attestations_bytes(run_dir, summary, report_format=6)))


def test_dummy_weights_void_the_accuracy_statement(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    path = run_dir.server_record("candidate")
    record = json.loads(path.read_text())
    record["argv"] = [*record["argv"], "--load-format", "dummy"]
    path.write_text(json.dumps(record))
    summary = derive_summary(run_dir)
    before = _gates(attestations_bytes(run_dir, summary, report_format=6))
    after = _gates(attestations_bytes(run_dir, summary))
    accuracy = next(gate for gate in after if gate.startswith("accuracy"))
    assert before[accuracy][0] != "FAILED" and after[accuracy][0] == "FAILED"
    assert "; warning: Dummy weights: candidate ran random weights (--load-format dummy)" in after[accuracy][1]


def test_a_flagged_wake_effect_limits_a_speed_claim_at_its_point_only(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    summary = derive_summary(run_dir)
    point = summary.bench.points[0].point_id
    ratio = measured(
        summary,
        RatioClaim(
            kind="ratio", candidate="candidate", baseline="baseline", point=point, metric="decode_tok_s", value=1.0
        ),
    )
    claim = {
        "kind": "ratio",
        "name": "faster",
        "candidate": "candidate",
        "baseline": "baseline",
        "point": point,
        "metric": "decode_tok_s",
        "value": ratio,
    }
    (run_dir.root / CLAIMS_NAME).write_text(json.dumps({"schema_version": 1, "claims": [claim]}))
    results = {}
    for at in (point, "another-point"):
        summary.bench.wake_effects = [
            WakeEffect(server="candidate", point_id=at, woken_waves=4, continued_waves=4, ratio=0.9, flagged=True)
        ]
        results[at] = _gates(attestations_bytes(run_dir, summary))["claim faster"]
    assert results["another-point"][0] == "PASSED"
    assert results[point][0] == "WARNED" and f"; warning: Wake-up flagged: candidate at {point}" in results[point][1]
