"""verify's weights check on signed bundles: a snapshot file that is not the HF cache's blob fails; a model.sig
made by model-signing verifies with the policy's key, and require_model_signature wants both sides signed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from byog.bundles.verify import verify_bundle
from byog.core.paths import RunDir
from byog.runtimes.identity_probe import model_identity
from tests.unit.bundles.checks.test_identity import (  # noqa: F401 (run_dir: the fixture)
    check,
    edit_server,
    identity,
    pack,
    policy_file,
    run_dir,
)
from tests.unit.bundles.test_model_sig import _signed_folder
from tests.unit.runtimes.test_identity_probe import _hub_snapshot


def with_weights(rd: RunDir, name: str, weights: dict[str, Any]) -> None:
    edit_server(rd, name, identity={**identity(), "weights": weights})


def test_a_snapshot_file_that_is_not_the_caches_blob_fails(tmp_path: Path, run_dir: RunDir) -> None:  # noqa: F811
    snapshot = _hub_snapshot(tmp_path / "hub")
    with_weights(run_dir, "baseline", model_identity(str(snapshot), None))
    (snapshot / "model.safetensors").resolve().write_bytes(b"\x01" * 4096)
    with_weights(run_dir, "candidate", model_identity(str(snapshot), None))
    bundle, allowed = pack(tmp_path, run_dir)
    found = check(verify_bundle(bundle, allowed_signers=allowed), "weights")
    assert found.status == "fail"
    assert found.details["failed"] == [
        "candidate: model.safetensors is not the blob the HF cache holds for org/tiny@0123456789ab (etag "
        + (snapshot / "model.safetensors").resolve().name[:12]
        + ")"
    ]
    assert found.details["servers"][1] == (
        "baseline: HF org/tiny@0123456789ab (refs main): 3 files match the cache's blobs; 1 without one (README.md)"
    )


def test_the_policy_wants_both_sides_signed_by_the_same_signer(tmp_path: Path, run_dir: RunDir) -> None:  # noqa: F811
    folder, public = _signed_folder(tmp_path)
    signed = model_identity(str(folder), None)
    with_weights(run_dir, "candidate", signed)
    with_weights(run_dir, "baseline", signed)
    bundle, allowed = pack(tmp_path, run_dir)
    signer = [{"name": "publisher", "public_key": public}]
    policy = policy_file(tmp_path, require_model_signature=True, model_signers=signer)
    found = check(verify_bundle(bundle, allowed_signers=allowed, policy=policy), "weights")
    assert found.status == "pass" and found.message.startswith("candidate: model.sig valid by publisher (key sha256")

    (folder / "config.json").write_text('{"hidden_size": 9}')
    with_weights(run_dir, "candidate", model_identity(str(folder), None))
    (tmp_path / "again").mkdir()
    bundle, allowed = pack(tmp_path / "again", run_dir)
    found = check(verify_bundle(bundle, allowed_signers=allowed, policy=policy), "weights")
    assert found.status == "fail"
    assert found.details["failed"] == [
        "candidate vs baseline: the policy requires both sides' weights to carry a valid signature by the same "
        "signer (candidate: invalid; baseline: valid by publisher)"
    ]
    # without a policy the lines inform
    plain = check(verify_bundle(bundle, allowed_signers=allowed), "weights")
    assert plain.status == "pass" and "it covers other files: config.json" in plain.message
