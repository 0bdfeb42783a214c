"""An edited summary, re-hashed and re-signed: by another key -> wrong signer; by the right key ->
the numbers recomputed from the raw rows disagree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.bundles.finalize import seal_and_pack
from byog.bundles.sign import SigningKey
from byog.bundles.verify import verify_bundle
from byog.core.paths import RunDir
from tests.support.bundles_kit import build_bundle
from tests.support.keys import allowed_signers, make_key

Tampered = tuple[RunDir, Path, SigningKey, SigningKey]  # run dir, allowed signers, alice, mallory


@pytest.fixture()
def tampered(tmp_path: Path) -> Tampered:
    alice, alice_pub = make_key(tmp_path, "alice")
    mallory, _ = make_key(tmp_path, "mallory")
    run_dir, packed = build_bundle(tmp_path, alice)
    allowed = allowed_signers(tmp_path / "allowed_signers", [("alice@example.com", alice_pub)])
    assert verify_bundle(packed.bundle, allowed_signers=allowed).verified
    summary = json.loads(run_dir.summary_json.read_text())
    point = summary["bench"]["points"][0]
    point["metrics"]["decode_tok_s"] *= 1.10  # the claim a contributor would like to make
    run_dir.summary_json.write_text(json.dumps(summary, indent=2, sort_keys=True))
    return run_dir, allowed, alice, mallory


def test_resigned_by_another_key_is_the_wrong_signer(tampered: Tampered, tmp_path: Path) -> None:
    run_dir, allowed, _, mallory = tampered
    packed = seal_and_pack(run_dir, tmp_path / "mallory.tar.gz", key=mallory)
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    assert not report.verified
    failed = {r.name: r.message for r in report.results if r.status == "fail"}
    assert "signature" in failed and "wrong signer" in failed["signature"]
    assert packed.signed_by is not None and packed.signed_by in failed["signature"]


def test_resigned_by_the_right_key_fails_the_recomputation(tampered: Tampered, tmp_path: Path) -> None:
    run_dir, allowed, alice, _ = tampered
    packed = seal_and_pack(run_dir, tmp_path / "alice-again.tar.gz", key=alice)
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    status = {r.name: r.status for r in report.results}
    assert status["hashes"] == status["signature"] == status["schemas"] == "pass"
    assert status["summary"] == "fail" and status["report"] == "fail"
    summary_line = next(r.message for r in report.results if r.name == "summary")
    assert "bench.points[0].metrics.decode_tok_s" in summary_line
    assert report.failures == [f"summary: {summary_line}", next(f for f in report.failures if f.startswith("report:"))]


def test_a_predicate_that_lies_about_the_files_fails_even_when_signed(tmp_path: Path) -> None:
    """The signed predicate (images, argv, plan hash) must be what the files say, not just signed."""
    import tarfile

    from byog.bundles.pack import tar_gz
    from byog.bundles.sign import sign_bytes
    from byog.core.canonical import canonical_json
    from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME

    alice, alice_pub = make_key(tmp_path, "alice")
    _, packed = build_bundle(tmp_path, alice)
    allowed = allowed_signers(tmp_path / "allowed_signers", [("alice@example.com", alice_pub)])
    with tarfile.open(packed.bundle, "r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    original = json.loads(files[MANIFEST_NAME])
    lies = {
        "servers": lambda p: p["servers"][1].__setitem__("image_digests", ["vllm/vllm-openai@sha256:" + "b" * 64]),
        "hardware": lambda p: p["hardware"].__setitem__("cpu_count", 999),
        "plan_sha256": lambda p: p.__setitem__("plan_sha256", "0" * 64),
    }
    for field, lie in lies.items():
        statement = json.loads(json.dumps(original))
        lie(statement["predicate"])
        files[MANIFEST_NAME] = canonical_json(statement)
        files[SIGNATURE_NAME] = sign_bytes(files[MANIFEST_NAME], alice)
        forged = tmp_path / "forged.tar.gz"
        forged.write_bytes(tar_gz(files))
        report = verify_bundle(forged, allowed_signers=allowed)
        status = {r.name: r.status for r in report.results}
        assert status["hashes"] == status["signature"] == "pass"
        assert report.failures == [f"predicate: the manifest's predicate does not match the bundle's files in: {field}"]
