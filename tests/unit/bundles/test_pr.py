"""The PR workflow's steps (scripts/pr-verify.sh) run for real against real bundles; only what is
GitHub's is faked: the event payload and comment list are files, the bundle link is file://,
and GitHub's /users/USER/ssh_signing_keys is a local HTTP server. Every byog command is the real one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from byog.bundles.finalize import seal_and_pack
from byog.bundles.pr import COMMENT_MARKER, comment_body, find_bundles
from tests.support.bundles_kit import build_bundle, make_key

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "pr-verify.sh"


class _GitHub(BaseHTTPRequestHandler):
    keys: dict[str, str] = {}

    def do_GET(self) -> None:
        user = self.path.removeprefix("/users/").removesuffix("/ssh_signing_keys")
        found = self.keys.get(user)
        body = json.dumps([{"id": 1, "key": found, "title": "laptop"}] if found else {"message": "Not Found"}).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def github() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _GitHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """alice's honest bundle, and the same run re-signed by mallory."""
    folder = tmp_path_factory.mktemp("pr")
    alice, alice_pub = make_key(folder, "alice")
    mallory, _ = make_key(folder, "mallory")
    _GitHub.keys = {"alice": alice_pub}
    run_dir, packed = build_bundle(folder, alice)
    forged = seal_and_pack(run_dir, folder / "forged.tar.gz", key=mallory)
    return {"honest": packed.bundle, "forged": forged.bundle, "folder": folder}


def _event(folder: Path, body: str, author: str = "alice") -> Path:
    path = folder / f"event-{abs(hash(body))}.json"
    path.write_text(
        json.dumps(
            {
                "action": "opened",
                "pull_request": {"number": 61867, "user": {"login": author}, "body": body, "head": {"sha": "f" * 40}},
            }
        )
    )
    return path


def _run(event: Path, work: Path, github: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "example/project",
        "GITHUB_RUN_ID": "7",
        "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
        "BYOG_WORK": str(work),
        "BYOG_GITHUB_API": github,
        "BYOG": f"{sys.executable} -m byog",
        "COLUMNS": "200",
        **extra,
    }
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "BYOG_POST"):
        env.pop(name, None)
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600, check=False)


def test_a_linked_signed_bundle_verifies_and_the_comment_carries_the_report(
    bundles: dict[str, Path], github: str, tmp_path: Path
) -> None:
    folder = bundles["folder"]
    comments = tmp_path / "comments.json"  # an older link in the body, the newest in a comment: the newest is checked
    comments.write_text(
        json.dumps(
            [
                {"user": {"login": "bob"}, "body": "my own bundle: file:///tmp/not-the-authors.tar.gz"},
                {"user": {"login": "alice"}, "body": f"updated bundle: {bundles['honest'].as_uri()}"},
            ]
        )
    )
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "schema_version: 1\nclaims:\n  - kind: verdict\n    name: gsm8k no worse\n    task: gsm8k\n"
        "    candidate: candidate\n    verdict: equivalent\n"
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text("schema_version: 1\nrequired_tasks: [gsm8k]\n")
    event = _event(folder, "Faster decode. Old bundle: file:///tmp/stale.tar.gz")
    work = tmp_path / "work"
    result = _run(event, work, github, BYOG_PR_COMMENTS=str(comments), BYOG_CLAIMS=str(claims), BYOG_POLICY=str(policy))
    comment = (work / "comment.md").read_text() if (work / "comment.md").is_file() else ""
    # the claim is a verdict the synthetic bundle does not reach: verify fails it, and says which
    assert result.returncode == 1, result.stdout + result.stderr
    assert comment.startswith(COMMENT_MARKER) and "## byog verify: ❌ not verified (1 check(s) failed)" in comment
    assert (
        "| ✅ | signature | signed by alice@github.com" in comment and "| ✅ | policy | meets the policy |" in comment
    )
    assert "| ❌ | claims | claim 'gsm8k no worse': the recomputed verdict is inconclusive |" in comment
    assert (
        (work / "allowed_signers").read_text().startswith('alice@github.com namespaces="byog-bundle@v1" ssh-ed25519 ')
    )
    assert "The report is not shown" in comment and (work / "summary.md").read_text() == comment

    claims.write_text(
        "schema_version: 1\nclaims:\n  - kind: verdict\n    name: gsm8k unsure\n    task: gsm8k\n"
        "    candidate: candidate\n    verdict: inconclusive\n"
    )
    work = tmp_path / "work-2"
    result = _run(event, work, github, BYOG_PR_COMMENTS=str(comments), BYOG_CLAIMS=str(claims), BYOG_POLICY=str(policy))
    comment = (work / "comment.md").read_text()
    assert result.returncode == 0, result.stdout + result.stderr + comment
    assert "## byog verify: ✅ verified" in comment and f"Bundle: `{bundles['honest'].as_uri()}`" in comment
    report = comment.split("<details open>", 1)[1]
    assert "# byog report: synthetic" in report and "## Headline" in report
    assert "| ✅ holds | claim: gsm8k unsure | inconclusive | inconclusive |" in report  # the PR's claims file, judged
    assert "In the bundle (not embedded here): `plots/" in report  # a comment cannot resolve relative image links
    assert "https://github.com/example/project/actions/runs/7" in comment


def test_a_bundle_signed_by_someone_else_fails_the_check(bundles: dict[str, Path], github: str, tmp_path: Path) -> None:
    event = _event(bundles["folder"], f"Bundle: {bundles['forged'].as_uri()}")
    result = _run(event, tmp_path / "work", github)
    comment = (tmp_path / "work" / "comment.md").read_text()
    assert result.returncode == 1
    assert (
        "❌ not verified" in comment
        and "| ❌ | signature | signed by key SHA256:" in comment
        and "wrong signer" in comment
    )
    assert "# byog report" not in comment


def test_a_pr_without_a_bundle_is_nothing_to_check_unless_required(
    bundles: dict[str, Path], github: str, tmp_path: Path
) -> None:
    event = _event(bundles["folder"], "A docs fix, no bundle.")
    assert _run(event, tmp_path / "a", github).returncode == 0
    assert _run(event, tmp_path / "b", github, BYOG_REQUIRE_BUNDLE="1").returncode == 1


def test_the_bundle_is_the_authors_newest_link_and_reproductions_come_from_anyone() -> None:
    event = {
        "pull_request": {
            "number": 5,
            "user": {"login": "alice"},
            "head": {"sha": "a" * 40},
            "body": "v1: https://github.com/user-attachments/files/1/bundle.tar.gz",
        }
    }
    comments = [
        {"user": {"login": "mallory"}, "body": "use mine: https://evil.example/bundle.tar.gz"},
        {"user": {"login": "alice"}, "body": "v2: [bundle](https://github.com/user-attachments/files/2/bundle.tar.gz)"},
        {
            "user": {"login": "maint"},
            "body": "reproduced: https://github.com/user-attachments/files/3/bundle.reproduction.tar.gz",
        },
        {
            "user": {"login": "alice"},
            "body": "not links: http://plain.example/b.tar.gz javascript:x.tar.gz ftp://x/y.tar.gz",
        },
    ]
    found = find_bundles(event, comments)
    assert found.bundle == "https://github.com/user-attachments/files/2/bundle.tar.gz"
    assert found.reproductions == ["https://github.com/user-attachments/files/3/bundle.reproduction.tar.gz"]
    assert (found.pr, found.author, found.head_sha) == (5, "alice", "a" * 40)
    on_comment = find_bundles(
        {
            "issue": {"number": 5, "user": {"login": "alice"}, "body": ""},
            "comment": {"user": {"login": "alice"}, "body": "https://x.example/b.tgz"},
        }
    )
    assert on_comment.bundle == "https://x.example/b.tgz" and on_comment.head_sha is None


def test_the_comment_escapes_what_the_bundle_says() -> None:
    verify = {
        "verified": False,
        "signer": None,
        "checks": [
            {
                "name": "summary",
                "status": "fail",
                "message": "x | ![pwn](https://evil.example/p.png) [ok](https://evil.example)",
            }
        ],
    }
    body = comment_body(verify, "# report", bundle_url="https://example/b.tar.gz")
    assert "![pwn](" not in body and "\\!\\[pwn\\]" in body and "x \\| " in body
    assert "# report" not in body  # an unverified bundle's report is never shown
