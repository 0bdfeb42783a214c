"""verify's engine check on signed bundles: lines without a policy; forbid_engine_patches fails a patch or
an unknown install, and a waiver with the patched file's digest lets it through, named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from byog.bundles.verify import verify_bundle
from byog.core.paths import RunDir
from tests.unit.bundles.checks.test_identity import (  # noqa: F401 (run_dir: the fixture)
    check,
    edit_server,
    identity,
    pack,
    policy_file,
    run_dir,
)

SHA = "f" * 64
CLEAN = {"status": "clean", "files_checked": 3307}
PATCHED = {"status": "patched", "files_checked": 3307, "modified": {"vllm/config.py": SHA}, "modified_count": 1}


def with_integrity(rd: RunDir, name: str, integrity: dict[str, Any] | None) -> None:
    found = identity()
    if integrity is not None:
        found["vllm"]["integrity"] = integrity
    edit_server(rd, name, identity=found)


def test_without_a_policy_the_lines_inform(tmp_path: Path, run_dir: RunDir) -> None:  # noqa: F811
    with_integrity(run_dir, "candidate", PATCHED)
    with_integrity(run_dir, "baseline", CLEAN)
    bundle, allowed = pack(tmp_path, run_dir)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert check(report, "engine").status == "pass"
    assert check(report, "engine").message == (
        "candidate: patched: modified vllm/config.py; baseline: clean (vllm 0.32.0: 3307 files match RECORD)"
    )


def test_the_policy_fails_a_patch_and_an_unknown_install_and_a_waiver_names_it(
    tmp_path: Path,
    run_dir: RunDir,  # noqa: F811
) -> None:
    with_integrity(run_dir, "candidate", PATCHED)
    with_integrity(run_dir, "baseline", None)
    bundle, allowed = pack(tmp_path, run_dir)
    strict = verify_bundle(bundle, allowed_signers=allowed, policy=policy_file(tmp_path, forbid_engine_patches=True))
    engine = check(strict, "engine")
    assert not strict.verified and engine.status == "fail"
    assert engine.details["failed"] == [
        "candidate: patched: modified vllm/config.py",
        "baseline: unknown: no engine integrity recorded",
    ]
    waiver = policy_file(tmp_path, forbid_engine_patches=True, engine_patch_waivers={"vllm/config.py": SHA})
    waived = check(verify_bundle(bundle, allowed_signers=allowed, policy=waiver), "engine")
    assert waived.details["failed"] == ["baseline: unknown: no engine integrity recorded"]
    assert waived.details["servers"][0] == "candidate: patched: waiver vllm/config.py (sha256 ffffffffffff)"
