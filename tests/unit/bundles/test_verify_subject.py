"""What a bundle is for: the signed subject, its parsing and matching, and manifests without one
keeping the bytes they always had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.bundles.manifest import build_statement, statement_bytes
from byog.bundles.verify import verify_bundle
from byog.core.errors import UsageError
from byog.schemas.manifest import BundleSubject
from tests.support.bundles_kit import build_bundle
from tests.support.keys import allowed_signers, make_key


def test_parse_and_match() -> None:
    pr = BundleSubject.parse("Octo-Org/my.repo#42")
    assert (pr.repository, pr.pr, pr.commit) == ("Octo-Org/my.repo", 42, None) and pr.label() == "Octo-Org/my.repo#42"
    assert pr.mismatch(BundleSubject.parse("octo-org/MY.REPO#42")) is None  # GitHub names ignore case
    assert "not pull request #43" in (pr.mismatch(BundleSubject.parse("Octo-Org/my.repo#43")) or "")
    assert "not other/repo" in (pr.mismatch(BundleSubject.parse("other/repo#42")) or "")
    commit = BundleSubject.parse("o/r@ABCDEF1234")
    assert commit.commit == "abcdef1234" and commit.mismatch(BundleSubject.parse("o/r@abcdef1")) is None
    assert commit.mismatch(BundleSubject.parse("o/r@abcdef2")) is not None
    for bad in ("o/r", "o/r#", "o/r#x", "/r#1", "o/r@xyz1234", "o/r#1 #2", "o r/x#1", "o/r#1\n"):
        with pytest.raises(ValueError):
            BundleSubject.parse(bad)


def test_a_manifest_without_subject_has_no_subject_key() -> None:
    files = {"plan.yaml": b"name: x\n", "summary.json": b"{}"}
    plain = statement_bytes(build_statement(files))
    assert b'"subject":null' not in plain and '"subject"' not in json.loads(plain)["predicate"]
    subject = BundleSubject.parse("o/r#7")
    signed = json.loads(statement_bytes(build_statement(files, subject=subject)))
    assert signed["predicate"]["subject"] == {"repository": "o/r", "pr": 7, "commit": None}


def test_pack_for_and_verify_for(tmp_path: Path) -> None:
    from byog.bundles.finalize import seal_and_pack

    key, public = make_key(tmp_path, "alice")
    run_dir, _ = build_bundle(tmp_path, key)
    allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", public)])
    packed = seal_and_pack(run_dir, tmp_path / "for.tar.gz", key=key, subject="octo/repo#5")
    ok = verify_bundle(packed.bundle, allowed_signers=allowed, subject_for="octo/repo#5")
    assert ok.verified and any(r.name == "subject" and r.message == "made for octo/repo#5" for r in ok.results)
    replay = verify_bundle(packed.bundle, allowed_signers=allowed, subject_for="octo/repo#6")
    assert replay.failures == [
        "subject: the bundle is for octo/repo#5, not pull request #6: a bundle made for something else cannot vouch "
        "for this one"
    ]
    with pytest.raises(UsageError, match="--for"):
        verify_bundle(packed.bundle, allowed_signers=allowed, subject_for="not a subject")
    with pytest.raises(UsageError, match="--for"):
        seal_and_pack(run_dir, tmp_path / "bad.tar.gz", key=key, subject="octo/repo")


def test_a_pr_and_its_head_parse_and_the_subject_check_holds_the_number() -> None:
    wanted = BundleSubject.parse("o/r#5@ABCDEF1")
    assert (wanted.pr, wanted.commit, wanted.label()) == (5, "abcdef1", "o/r#5@abcdef1")
    assert BundleSubject.parse("o/r#5").mismatch(wanted) is None  # the commit check holds the head
    assert "not pull request #5" in (BundleSubject.parse("o/r#6@abcdef1").mismatch(wanted) or "")
