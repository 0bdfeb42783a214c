"""byog verify end to end on a signed synthetic bundle: exit codes 0/1/2/3, --json, policy, claims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from byog.bundles.verify import verify_bundle
from byog.cli import app
from byog.core.paths import RunDir
from tests.support.bundles_kit import build_bundle
from tests.support.keys import allowed_signers, make_key

Signed = tuple[Path, RunDir, Path, Path]  # folder, run dir, bundle, allowed signers

runner = CliRunner()


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    folder = tmp_path_factory.mktemp("verify")
    key, public = make_key(folder, "alice")
    run_dir, packed = build_bundle(folder, key)
    allowed = allowed_signers(folder / "allowed_signers", [("alice@example.com", public)])
    return folder, run_dir, packed.bundle, allowed


def _write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(json.loads(json.dumps(doc))))  # no shared objects, so no anchors
    return path


def test_a_good_bundle_verifies_with_exit_0(signed: Signed) -> None:
    _, _, bundle, allowed = signed
    result = runner.invoke(app, ["verify", str(bundle), "--allowed-signers", str(allowed)])
    assert result.exit_code == 0, result.output
    assert "signed by alice@example.com" in result.output and "verified" in result.output
    assert "FAIL" not in result.output


def test_json_lists_every_check(signed: Signed) -> None:
    _, _, bundle, allowed = signed
    result = runner.invoke(app, ["verify", str(bundle), "--allowed-signers", str(allowed), "--json"])
    doc = json.loads(result.output)
    assert doc["verified"] is True and doc["signer"].startswith("alice@example.com (SHA256:")
    assert [c["name"] for c in doc["checks"]] == [
        "archive",
        "manifest",
        "signature",
        "hashes",
        "subject",
        "bounds",
        "predicate",
        "schemas",
        "records",
        "stopping",
        "tasks",
        "plan",
        "calibration",
        "sequential",
        "strata",
        "summary",
        "report",
        "attestations",
        "identity",
        "pairs",
        "commit",
        "engine",
        "weights",
        "policy",
        "claims",
    ]


def test_a_trusted_bundle_refused_when_read_whole_still_shows_its_signature_held(signed: Signed) -> None:
    """A refusal of the whole archive comes after the signature: the report says both, in that order of reading."""
    from byog.bundles.unpack import Limits

    _, _, bundle, allowed = signed
    report = verify_bundle(bundle, allowed_signers=allowed, limits=Limits(max_members=5))
    outcome = {r.name: (r.status, r.message) for r in report.results}
    assert outcome["archive"] == ("fail", "unsafe bundle: more than 5 members")
    assert outcome["signature"][0] == "pass" and report.signer is not None and not report.verified


def test_unknown_signer_fails_with_exit_1_one_line(signed: Signed, tmp_path: Path) -> None:
    _, _, bundle, _ = signed
    _, other = make_key(tmp_path, "bob")
    allowed = allowed_signers(tmp_path / "allowed", [("bob@example.com", other)])
    result = runner.invoke(app, ["verify", str(bundle), "--allowed-signers", str(allowed)])
    assert result.exit_code == 1
    fails = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and "wrong signer" in fails[0]


def test_usage_errors_exit_2(signed: Signed, tmp_path: Path) -> None:
    _, _, bundle, allowed = signed
    assert runner.invoke(app, ["verify", str(tmp_path / "missing.tar.gz")]).exit_code == 2
    assert runner.invoke(app, ["verify", str(bundle), "--allowed-signers", str(tmp_path / "nope")]).exit_code == 2
    bad_claims = _write(
        tmp_path / "claims.yaml", {"schema_version": 1, "claims": [{"server": "x", "metric": "m", "value": 1}]}
    )
    result = runner.invoke(app, ["verify", str(bundle), "--allowed-signers", str(allowed), "--claims", str(bad_claims)])
    assert result.exit_code == 2 and "exactly one of 'point' or 'select'" in result.output


def test_without_ssh_keygen_python_verifies_and_forcing_ssh_keygen_exits_3(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, _, bundle, allowed = signed
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("BYOG_SSH_BACKEND", raising=False)
    result = runner.invoke(app, ["verify", str(bundle), "--allowed-signers", str(allowed)])
    assert result.exit_code == 0 and "signed by alice@example.com" in result.output, result.output
    monkeypatch.setenv("BYOG_SSH_BACKEND", "ssh-keygen")
    result = runner.invoke(app, ["verify", str(bundle), "--allowed-signers", str(allowed)])
    assert result.exit_code == 3 and "ssh-keygen" in result.output


def test_claims_within_and_outside_tolerance(signed: Signed, tmp_path: Path) -> None:
    _, run_dir, bundle, allowed = signed
    summary = json.loads(run_dir.summary_json.read_text())
    point = next(p for p in summary["bench"]["points"] if p["server"] == "candidate")
    tok_s = point["metrics"]["decode_tok_s"]
    base = next(p for p in summary["bench"]["points"] if p["server"] == "baseline")["metrics"]["decode_tok_s"]
    select = {"workload": "decode", "batch_size": 1}
    good = _write(
        tmp_path / "good.yaml",
        {
            "schema_version": 1,
            "claims": [
                {
                    "name": "b1 tok/s",
                    "server": "candidate",
                    "select": select,
                    "metric": "decode_tok_s",
                    "value": round(tok_s * 1.02, 1),
                },
                {
                    "kind": "ratio",
                    "candidate": "candidate",
                    "baseline": "baseline",
                    "point": point["point_id"],
                    "metric": "decode_tok_s",
                    "value": round(tok_s / base, 3),
                    "tolerance": 0.01,
                },
                {
                    "server": "candidate",
                    "select": select,
                    "metric": "tpot_s.p50",
                    "value": point["metrics"]["tpot_s"]["p50"],
                },
                {
                    "name": "agentic",
                    "server": "candidate",
                    "select": {"workload": "agentic"},
                    "metric": "x",
                    "value": 1,
                    "not_checked": "no agentic workload",
                },
            ],
        },
    )
    report = verify_bundle(bundle, allowed_signers=allowed, claims=good)
    assert report.verified, report.failures
    assert "3 claim(s) hold" in report.results[-1].message and "1 not checked (agentic)" in report.results[-1].message
    # every claim's outcome comes back from the checking child, into verify --json's details
    held = report.as_json()["details"]["claims"]
    assert len(held["held"]) == 3 and held["failed"] == [] and held["not_checked"] == ["agentic"]
    off = _write(
        tmp_path / "off.yaml",
        {
            "schema_version": 1,
            "claims": [
                {
                    "name": "b1 tok/s",
                    "server": "candidate",
                    "select": select,
                    "metric": "decode_tok_s",
                    "value": round(tok_s * 1.05, 1),
                    "tolerance": 0.03,
                },
            ],
        },
    )
    report = verify_bundle(bundle, allowed_signers=allowed, claims=off)
    assert report.failures == [
        f"claims: claim 'b1 tok/s' = {round(tok_s * 1.05, 1):g} but the bundle says {tok_s:.4g} (-4.8%, tolerance 3%)"
    ]
    assert report.details["claims"] == {
        "held": [],
        "failed": [report.failures[0].removeprefix("claims: ")],
        "not_checked": [],
    }
    missing = _write(
        tmp_path / "missing.yaml",
        {
            "schema_version": 1,
            "claims": [
                {"server": "candidate", "select": {"batch_size": 64}, "metric": "decode_tok_s", "value": 1},
            ],
        },
    )
    report = verify_bundle(bundle, allowed_signers=allowed, claims=missing)
    assert "candidate batch_size=64 matches no point" in report.failures[0]


def test_policy(signed: Signed, tmp_path: Path) -> None:
    _, _, bundle, allowed = signed
    ok = _write(
        tmp_path / "ok.yaml",
        {
            "schema_version": 1,
            "required_points": [{"server": "baseline", "select": {"batch_size": 1}}],
            "min_samples": {"requests": 2, "eval_items": 4},
            "require_valid_points": True,
        },
    )
    report = verify_bundle(bundle, allowed_signers=allowed, policy=ok)
    assert report.verified, report.failures
    for doc, expected in [
        ({"allowed_image_digests": ["sha256:" + "a" * 64]}, "ran no image pinned by digest"),
        (
            {"required_points": [{"server": "baseline", "select": {"batch_size": 8}}]},
            "required point baseline batch_size=8 is not in the bundle",
        ),
        ({"min_samples": {"requests": 3}}, "measured 2 requests, fewer than the policy's 3"),
        ({"min_samples": {"eval_items": 5}}, "scored 4 items, fewer than the policy's 5"),
        ({"required_tasks": ["aime25"]}, "required task 'aime25' has no verdict for 'candidate'"),
        # 4 GSM8K items cannot keep the gate sound: the synthetic verdict is a screening result
        ({"forbid_screening": True}, "from a design that cannot keep the gate sound (screening)"),
    ]:
        policy = _write(tmp_path / "p.yaml", {"schema_version": 1, **doc})
        report = verify_bundle(bundle, allowed_signers=allowed, policy=policy)
        assert len(report.failures) == 1 and expected in report.failures[0], (doc, report.failures)


def test_a_policy_failing_three_requirements_names_all_three(signed: Signed, tmp_path: Path) -> None:
    _, _, bundle, allowed = signed
    policy = _write(
        tmp_path / "three.yaml",
        {
            "schema_version": 1,
            "required_points": [{"server": "baseline", "select": {"batch_size": 8}}],
            "required_tasks": ["aime25"],
            "forbid_screening": True,
        },
    )
    expected = [
        "required point baseline batch_size=8 is not in the bundle",
        "required task 'aime25' has no verdict for 'candidate'",
        "from a design that cannot keep the gate sound (screening)",
    ]
    result = runner.invoke(app, ["verify", str(bundle), "--allowed-signers", str(allowed), "--policy", str(policy)])
    assert result.exit_code == 1
    listed = [line for line in result.output.splitlines() if line.startswith("       - ")]
    assert len(listed) == 3 and all(any(e in line for line in listed) for e in expected), result.output
    assert "FAIL policy: 3 policy requirements not met: (1) required point" in result.output
    assert "more)" not in result.output
    doc = json.loads(
        runner.invoke(
            app, ["verify", str(bundle), "--allowed-signers", str(allowed), "--policy", str(policy), "--json"]
        ).output
    )
    failed = doc["details"]["policy"]["failed"]
    assert len(failed) == 3 and all(any(e in f for f in failed) for e in expected)


def test_unsigned_bundle_fails_unless_allowed(tmp_path: Path) -> None:
    _, packed = build_bundle(tmp_path, None)
    report = verify_bundle(packed.bundle)
    assert report.failures == [
        "signature: the bundle is unsigned: nobody vouches for it (pass --allow-unsigned to check it anyway)"
    ]
    report = verify_bundle(packed.bundle, allow_unsigned=True)
    assert report.verified
