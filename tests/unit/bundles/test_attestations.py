"""attestations.intoto.jsonl: in-toto test-result statements per gate, valid under in-toto-attestation,
rebuilt by verify (an edited one fails even when re-signed), emitted with verify's own SVR."""

from __future__ import annotations

import json
from pathlib import Path

from google.protobuf import json_format
from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement
from typer.testing import CliRunner

from byog.analysis.summary import derive_summary
from byog.bundles.attestations import ATTESTATIONS_NAME, SVR, SVR_NAME, TEST_RESULT, attestations_bytes
from byog.bundles.finalize import seal_and_pack
from byog.bundles.verify import verify_bundle
from byog.cli import app
from byog.core.io import atomic_write_bytes
from tests.support.bundles_kit import TINY
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
    atomic_write_bytes(run_dir.root / ATTESTATIONS_NAME, edited)
    resigned = seal_and_pack(run_dir, tmp_path / "edited.tar.gz", key=key, plots=None)
    report = verify_bundle(resigned.bundle, allowed_signers=allowed)
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
