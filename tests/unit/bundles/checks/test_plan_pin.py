"""verify --plan: a signed bundle holds its plan pin; an edited plan file is refused in one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from byog.bundles.finalize import seal_and_pack
from byog.bundles.verify import verify_bundle
from byog.core.errors import UsageError
from byog.core.io import atomic_write_json
from byog.plans.pin import make_pin
from byog.schemas.plan_pin import PLAN_PIN_NAME
from tests.support.bundles_kit import TINY
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import make_run_dir


def test_verify_plan_passes_the_pinned_plan_and_refuses_an_edited_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # --plan as a PR's checkout names it: a short relative path
    key, public = make_key(tmp_path, "alice")
    allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", public)])
    run_dir = make_run_dir(tmp_path / "run", TINY)
    run_dir.plots_dir.mkdir(exist_ok=True)
    given = run_dir.plan_yaml.read_bytes()
    pin = make_pin("plans/pr.yaml", given, yaml.safe_load(given), "full", given.decode())
    atomic_write_json(run_dir.root / PLAN_PIN_NAME, pin.model_dump(mode="json"))
    packed = seal_and_pack(run_dir, tmp_path / "bundle.tar.gz", key=key, plots=None)

    plan = Path("pr.yaml")
    plan.write_bytes(given)
    ok = verify_bundle(packed.bundle, allowed_signers=allowed, plan=plan)
    line = next(r for r in ok.results if r.name == "plan")
    assert ok.verified and line.status == "pass" and "byte for byte" in line.message

    plain = verify_bundle(packed.bundle, allowed_signers=allowed)
    assert plain.verified and next(r for r in plain.results if r.name == "plan").status == "skip"

    plan.write_bytes(given.replace(b"waves: 2", b"waves: 3"))
    edited = verify_bundle(packed.bundle, allowed_signers=allowed, plan=plan)
    assert not edited.verified
    now = plan.read_bytes()
    theirs = make_pin("pr.yaml", now, yaml.safe_load(now), "full", "")
    assert [f for f in edited.failures if f.startswith("plan:")] == [
        f"plan: the bundle did not run {plan}: the run pinned sha256 {pin.file_sha256[:12]} "
        f"(canonical {pin.canonical_sha256[:12]}), the file has {theirs.file_sha256[:12]} "
        f"(canonical {theirs.canonical_sha256[:12]})"
    ]


def test_a_bundle_without_a_pin_cannot_show_it_ran_a_plan(tmp_path: Path) -> None:
    key, public = make_key(tmp_path, "alice")
    allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", public)])
    run_dir = make_run_dir(tmp_path / "run", TINY)
    run_dir.plots_dir.mkdir(exist_ok=True)
    packed = seal_and_pack(run_dir, tmp_path / "bundle.tar.gz", key=key, plots=None)
    plan = tmp_path / "pr.yaml"
    plan.write_bytes(run_dir.plan_yaml.read_bytes())
    report = verify_bundle(packed.bundle, allowed_signers=allowed, plan=plan)
    assert [f for f in report.failures if f.startswith("plan:")] == [
        f"plan: the bundle pins no plan ({PLAN_PIN_NAME} is absent), so it cannot show it ran {plan}"
    ]
    with pytest.raises(UsageError, match="does not exist"):
        verify_bundle(packed.bundle, allowed_signers=allowed, plan=tmp_path / "missing.yaml")
    plan.write_bytes(b"#" * 300_000)
    with pytest.raises(UsageError, match="over 256 KiB"):
        verify_bundle(packed.bundle, allowed_signers=allowed, plan=plan)
