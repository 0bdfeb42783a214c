"""verify's pairs and commit checks on synthetic bundles whose server records carry identities."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from byog.analysis.summary import derive_summary
from byog.bundles.finalize import seal_and_pack
from byog.bundles.verify import verify_bundle
from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir
from byog.report.markdown import render_report
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import SyntheticSpec, make_run_dir

COMMIT = "0123456789abcdef0123456789abcdef01234567"
WEIGHTS = "a" * 64
SERVER_INFO = Path(__file__).resolve().parents[3] / "fixtures" / "server-info"
EAGER = ["vllm", "serve", "/m", "--enforce-eager", "--enable-prompt-tokens-details", "--block-size", "32"]
# What the variant server was launched with (tests/fixtures/server-info/README.md)
VARIANT = [*EAGER, "-O", "3", "--additional-config", '{"alpha": 1}', "--additional-config", '{"beta": 2}']
VARIANT_ENV = {"VLLM_MAX_BAD_WORDS_TOTAL_TOKENS": "4096"}
VARIANT_LINE = (
    "candidate differs from baseline in: --optimization-level: optimization_level 2→3; "
    "additional_config.beta (none)→2; env.VLLM_MAX_BAD_WORDS_TOTAL_TOKENS 1024→4096"
)


def resolved(name: str) -> dict[str, Any]:
    """A real CPU vLLM 0.32's /server_info answer as server.json keeps it."""
    return {"server_info": json.loads((SERVER_INFO / f"{name}.json").read_text()), "answer_bytes": 25149}


def identity(commit: str | None = COMMIT, weights: str = WEIGHTS) -> dict[str, Any]:
    return {
        "vllm": {
            "distribution": "vllm",
            "version": "0.32.0",
            "commit": commit,
            "commit_source": "vllm/_version.py" if commit else None,
        },
        "weights": {"path": "/models/smol", "weights_sha256": weights, "tokenizer_sha256": "b" * 64, "files": {}},
    }


def edit_server(run_dir: RunDir, name: str, **changes: Any) -> None:
    path = run_dir.server_record(name)
    atomic_write_json(path, {**json.loads(path.read_text()), **changes})


def pack(
    tmp_path: Path, run_dir: RunDir, subject: str | None = None, forged: dict[str, Any] | None = None
) -> tuple[Path, Path]:
    """Sign the run as a bundle; ``forged``: the candidate's server.json changes written after byog's
    summary and report (what a hostile contributor's own tools would write)."""
    summary = derive_summary(run_dir)
    atomic_write_json(run_dir.summary_json, summary.to_json())
    atomic_write_text(run_dir.report_md, render_report(run_dir, summary))
    if forged:
        edit_server(run_dir, "candidate", **forged)
    key, public = make_key(tmp_path, "alice")
    allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", public)])
    return seal_and_pack(run_dir, tmp_path / "b.tar.gz", key=key, subject=subject).bundle, allowed


def policy_file(folder: Path, **fields: Any) -> Path:
    """A policy file (verify reads --policy from a path)."""
    path = folder / f"policy-{len(list(folder.glob('policy-*')))}.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, **fields}))
    return path


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    rd = make_run_dir(tmp_path / "run", SyntheticSpec(batch_sizes=(1,), eval_items=5))
    edit_server(rd, "candidate", identity=identity(), argv=VARIANT, env=VARIANT_ENV, resolved=resolved("variant"))
    edit_server(rd, "baseline", identity=identity(), argv=EAGER, resolved=resolved("stock"))
    return rd


def check(report: Any, name: str) -> Any:
    return next(r for r in report.results if r.name == name)


def test_pair_line_names_what_vllm_resolved_and_a_policy_refuses_it(tmp_path: Path, run_dir: RunDir) -> None:
    """-O after a switch, a repeated --additional-config and a VLLM_* env: each named from /server_info."""
    bundle, allowed = pack(tmp_path, run_dir)
    plain = verify_bundle(bundle, allowed_signers=allowed)
    assert plain.verified
    assert check(plain, "pairs").message == VARIANT_LINE
    policy = policy_file(tmp_path, pairs_may_differ_in=["additional_config", "env.VLLM_MAX_BAD_WORDS_TOTAL_TOKENS"])
    strict = verify_bundle(bundle, allowed_signers=allowed, policy=policy)
    assert strict.failures == [
        "pairs: candidate differs from baseline in --optimization-level: optimization_level 2→3, which the policy's "
        "pairs_may_differ_in does not allow"
    ]
    allowing = policy_file(
        tmp_path,
        pairs_may_differ_in=["additional_config", "env.VLLM_MAX_BAD_WORDS_TOTAL_TOKENS", "--optimization-level"],
    )
    assert verify_bundle(bundle, allowed_signers=allowed, policy=allowing).verified


@pytest.mark.parametrize(
    ("side", "changes", "missing"),
    [
        ("candidate", {"runtime": "endpoint", "argv": None, "identity": None, "resolved": None}, "no resolved config"),
        ("baseline", {"resolved": {"unknown": "/server_info answered HTTP 404"}}, "HTTP 404"),
        ("baseline", {"identity": {"error": "probe timed out"}}, "has no identity (probe timed out)"),
        ("candidate", {"schema_version": 1, "resolved": None}, "no resolved config (none recorded)"),
    ],
)
def test_an_unknown_side_cannot_be_checked_and_a_strict_policy_fails_it(
    tmp_path: Path, run_dir: RunDir, side: str, changes: dict[str, Any], missing: str
) -> None:
    edit_server(run_dir, side, **changes)
    bundle, allowed = pack(tmp_path, run_dir)
    plain = verify_bundle(bundle, allowed_signers=allowed)
    message = check(plain, "pairs").message
    assert plain.verified, plain.failures
    assert message.startswith("candidate vs baseline: unknown: cannot check ("), message
    assert f"server '{side}' " in message and missing in message
    for fields in ({"pairs_may_differ_in": ["--optimization-level"]}, {"stock": {"vllm_versions": ["0.32.0"]}}):
        strict = verify_bundle(bundle, allowed_signers=allowed, policy=policy_file(tmp_path, **fields))
        assert not strict.verified
        assert strict.failures[0].startswith("pairs: "), strict.failures
        assert "candidate vs baseline: unknown: cannot check: " in strict.failures[0]
        assert f"server '{side}' " in strict.failures[0] and missing in strict.failures[0]


def test_a_weights_digest_its_own_files_deny_fails(tmp_path: Path, run_dir: RunDir) -> None:
    lying = identity()
    lying["weights"]["files"] = {"model.safetensors": "c" * 64, "config.json": "d" * 64}
    edit_server(run_dir, "candidate", identity=lying)
    edit_server(run_dir, "baseline", identity=lying)
    bundle, allowed = pack(tmp_path, run_dir)
    report = verify_bundle(bundle, allowed_signers=allowed)
    failed = check(report, "pairs").details or {}
    assert any(
        f.startswith(f"server '{side}' records weights sha256 {WEIGHTS}, but its per-file")
        for side in ("candidate", "baseline")
        for f in failed.get("failed", [])
    ), report.failures


def test_different_weights_fail_without_a_policy(tmp_path: Path, run_dir: RunDir) -> None:
    edit_server(run_dir, "baseline", identity=identity(weights="c" * 64))
    bundle, allowed = pack(tmp_path, run_dir)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert check(report, "pairs").message.startswith(
        f"candidate and baseline differ in weights sha256 {WEIGHTS} (baseline sha256 {'c' * 64}), which the "
        "plan's pair does not declare"
    )


def test_stock_names_the_baseline_version(tmp_path: Path, run_dir: RunDir) -> None:
    bundle, allowed = pack(tmp_path, run_dir)
    allowed_all = ["additional_config", "env", "--optimization-level"]
    policy = policy_file(tmp_path, stock={"vllm_versions": ["0.31.0"]}, pairs_may_differ_in=allowed_all)
    report = verify_bundle(bundle, allowed_signers=allowed, policy=policy)
    assert report.failures == ["pairs: baseline 'baseline' runs vLLM 0.32.0, not a stock version (0.31.0)"]


def test_for_head_sha_binds_the_candidate_commit(tmp_path: Path, run_dir: RunDir) -> None:
    bundle, allowed = pack(tmp_path, run_dir, subject="octo/repo#5")
    same = verify_bundle(bundle, allowed_signers=allowed, subject_for=f"octo/repo#5@{COMMIT[:12]}")
    assert (
        same.verified and check(same, "commit").message == f"every candidate ran the pull request's head {COMMIT[:12]}"
    )
    other = "fedcba9876543210fedcba9876543210fedcba98"
    moved = verify_bundle(bundle, allowed_signers=allowed, subject_for=f"octo/repo#5@{other}")
    assert moved.failures == [f"commit: candidate 'candidate' ran commit {COMMIT}, not the pull request's head {other}"]


def test_a_short_recorded_commit_is_bound_to_the_full_head(tmp_path: Path, run_dir: RunDir) -> None:
    """vLLM's own _version.py records 9 hex digits (the H200 run's 0.24.0: 'ee0da84ab'); the PR head is 40."""
    edit_server(run_dir, "candidate", identity=identity(commit=COMMIT[:9]))
    bundle, allowed = pack(tmp_path, run_dir, subject="octo/repo#5")
    assert verify_bundle(bundle, allowed_signers=allowed, subject_for=f"octo/repo#5@{COMMIT}").verified
    other = "f" + COMMIT[1:]
    refused = verify_bundle(bundle, allowed_signers=allowed, subject_for=f"octo/repo#5@{other}")
    assert [f.split(",")[0] for f in refused.failures] == [f"commit: candidate 'candidate' ran commit {COMMIT[:9]}"]


def test_a_released_candidate_is_not_bound_and_the_policy_decides(tmp_path: Path, run_dir: RunDir) -> None:
    edit_server(run_dir, "candidate", identity=identity(commit=None))
    bundle, allowed = pack(tmp_path, run_dir, subject="octo/repo#5")
    head = "fedcba9876543210"
    loose = verify_bundle(bundle, allowed_signers=allowed, subject_for=f"octo/repo#5@{head}")
    assert loose.verified and "not bound to a commit" in check(loose, "commit").message
    strict = verify_bundle(
        bundle,
        allowed_signers=allowed,
        subject_for=f"octo/repo#5@{head}",
        policy=policy_file(tmp_path, require_bound_candidates=True),
    )
    assert [f.split(" (")[0] for f in strict.failures] == [
        "commit: candidate 'candidate' is a released build: not bound to a commit"
    ]


def test_only_a_server_with_no_file_at_all_counts_as_not_launched() -> None:
    """A numerics candidate byog skipped (a flat baseline) has no file; one whose server.json alone is
    missing was left out, and its pair is still compared (and fails for the missing record)."""
    from types import SimpleNamespace

    from byog.bundles.checks.identity import unlaunched

    names = ["plan.yaml", "servers/stock/server.json", "numerics/stock/record.json", "bench/hidden/p.parquet"]
    ctx: Any = SimpleNamespace(names=names)
    assert unlaunched(ctx, "dummy-compiled") and not unlaunched(ctx, "stock") and not unlaunched(ctx, "hidden")


OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def _labelled(sha: str, commit: str | None = None) -> dict[str, Any]:
    labels = {"byog.vllm-wheel.sha256": sha, **({"byog.vllm-wheel.commit": commit} if commit else {})}
    return {**identity(), "image": {"id": "sha256:" + "c" * 64, "labels": labels}}


def _wheel(sha: str) -> dict[str, Any]:
    found = identity()
    found["vllm"]["wheel_sha256"] = sha
    return found


def _with_version(version: str, source: str | None = "vllm/_version.py") -> dict[str, Any]:
    found = identity()
    found["vllm"].update(version=version, commit_source=source)
    return found


def _nodes(rank0: str, others: str) -> dict[str, Any]:
    return {
        "identity": identity(commit=rank0),
        "nodes": [{"rank": 0, "identity": identity(commit=rank0)}, {"rank": 1, "identity": identity(commit=others)}],
    }


# Each: what the candidate's server.json says, the failure verify must give (its start). Before this
# check existed every one of them verified.
HOSTILE_IDENTITIES: dict[str, tuple[dict[str, Any], str]] = {
    "commit is a shell command": (
        {"identity": identity(commit="HEAD; $(touch /tmp/pwned)")},
        "schemas: servers/candidate/server.json",
    ),
    "commit is a branch name": ({"identity": identity(commit="main")}, "schemas: servers/candidate/server.json"),
    "commit is the head and free text": (
        {"identity": identity(commit=f"{COMMIT} (rebased onto main)")},
        "schemas: servers/candidate/server.json",
    ),
    "commit in capitals": ({"identity": identity(commit=COMMIT.upper())}, "schemas: servers/candidate/server.json"),
    "wheel sha256 is not the image's label": (
        {"identity": {**_labelled("b" * 64), "vllm": _wheel("a" * 64)["vllm"]}},
        f"identity: server 'candidate': the installed wheel's sha256 {'a' * 64} is not the image label",
    ),
    "commit is not the image's label": (
        {"identity": _labelled("a" * 64, commit=OTHER)},
        f"identity: server 'candidate': the installed vLLM records commit {COMMIT}, the image label",
    ),
    "commit with no source": (
        {"identity": _with_version("0.32.0", source=None)},
        f"identity: server 'candidate' records commit {COMMIT} but no source",
    ),
    "version's +g<sha> names another commit": (
        {"identity": _with_version("0.32.1.dev3+gfedcba98")},
        f"identity: server 'candidate' records commit {COMMIT} (vllm/_version.py) but its version",
    ),
    "a node ran another commit than rank 0": (
        _nodes(rank0=OTHER, others=COMMIT),
        f"identity: server 'candidate' node 1 ran commit {COMMIT} while rank 0 ran {OTHER}",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_IDENTITIES))
def test_an_identity_that_contradicts_itself_fails_naming_both(tmp_path: Path, run_dir: RunDir, case: str) -> None:
    changes, failure = HOSTILE_IDENTITIES[case]
    bundle, allowed = pack(tmp_path, run_dir, forged=changes)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert report.failures[0].startswith(failure), report.failures
    if failure.startswith("schemas"):
        assert "identity.vllm.commit" in report.failures[0]


def test_nodes_that_ran_the_head_do_not_hide_rank_0s_other_commit(tmp_path: Path, run_dir: RunDir) -> None:
    edit_server(run_dir, "candidate", **_nodes(rank0=OTHER, others=COMMIT))
    bundle, allowed = pack(tmp_path, run_dir, subject="octo/repo#5")
    report = verify_bundle(bundle, allowed_signers=allowed, subject_for=f"octo/repo#5@{COMMIT}")
    assert f"commit: candidate 'candidate' ran commit {OTHER}, not the pull request's head {COMMIT}" in report.failures


def test_for_a_commit_without_a_pr_number_checks_the_measured_commit(tmp_path: Path, run_dir: RunDir) -> None:
    """``--for OWNER/REPO@SHA`` holds the signed subject and the commit the candidates ran, as ``#N@SHA`` does."""
    bundle, allowed = pack(tmp_path, run_dir, subject=f"octo/repo@{OTHER}")
    report = verify_bundle(bundle, allowed_signers=allowed, subject_for=f"octo/repo@{OTHER}")
    assert report.failures == [f"commit: candidate 'candidate' ran commit {COMMIT}, not commit {OTHER}"]
    (tmp_path / "same").mkdir()
    bundle, allowed = pack(tmp_path / "same", run_dir, subject=f"octo/repo@{COMMIT}")
    held = verify_bundle(bundle, allowed_signers=allowed, subject_for=f"octo/repo@{COMMIT}")
    assert held.verified and check(held, "commit").message == f"every candidate ran commit {COMMIT}"


def test_the_reports_setup_line_says_what_verify_says_the_pair_differs_in(run_dir: RunDir) -> None:
    """Format 6: the first screen's setup line holds verify's pair line; format 5 re-renders without it."""
    summary = derive_summary(run_dir)
    setup = next(x for x in render_report(run_dir, summary).splitlines() if x.startswith("- **candidate vs baseline**"))
    escaped = VARIANT_LINE.replace("_", "\\_")  # md_text escapes emphasis characters
    assert setup.endswith(f"baseline declared stock. {escaped}.")
    old = render_report(run_dir, summary, report_format=5)
    assert "differs from baseline in" not in old


def test_verify_prints_the_setup_and_warnings_above_its_checks(tmp_path: Path, run_dir: RunDir) -> None:
    """Text output: 'setup:' per pair and each 'warning:' come first, in plain words; --json carries them."""
    from typer.testing import CliRunner

    from byog.cli import app

    bundle, allowed = pack(tmp_path, run_dir)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert report.verified
    setup = [x for x in report.first_screen if x.startswith("setup: ")]
    assert setup == [x for x in report.first_screen[: len(setup)]]  # setup lines first, then the warnings
    assert setup[0].startswith("setup: candidate vs baseline: ") and VARIANT_LINE in setup[0]
    assert "\\_" not in setup[0] and "**" not in setup[0]  # plain text, not markdown
    assert report.as_json()["first_screen"] == report.first_screen
    out = CliRunner().invoke(app, ["verify", str(bundle), "--allowed-signers", str(allowed)], env={"COLUMNS": "2000"})
    lines = out.output.splitlines()
    assert lines[0].startswith("setup: candidate vs baseline: ")
    first_check = next(i for i, x in enumerate(lines) if x.startswith("ok  "))
    assert all(x.startswith(("setup: ", "warning: ")) for x in lines[:first_check])
