"""The PR workflow's steps (scripts/pr-verify.sh) run for real against real bundles; only what is
GitHub's is faked: the event payload and comment list are files, the bundle link is an https URL
served from this machine (a certificate made for the test, which curl is told to trust), and
GitHub's /users/USER/ssh_signing_keys is a local HTTP server. Every byog command is the real one."""

from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from html import unescape
from http.server import BaseHTTPRequestHandler, HTTPServer, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from byog.bundles.finalize import seal_and_pack
from byog.bundles.pr import COMMENT_MARKER, comment_body, find_bundles, links
from byog.core.io import atomic_write_json, atomic_write_text
from byog.report.context import ReportInputs
from byog.report.markdown import render_report
from tests.support.bundles_kit import build_bundle
from tests.support.cli import byog
from tests.support.cmark import LINK_FORMS, render_gfm
from tests.support.keys import make_key
from tests.support.synthetic import make_run_dir, saturate_client

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


class _Files(SimpleHTTPRequestHandler):
    """The test's folder over https; any path with ``?to=URL`` answers 302 to URL."""

    def do_GET(self) -> None:
        if "?to=" in self.path:
            self.send_response(302)
            self.send_header("Location", self.path.split("?to=", 1)[1])
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, Path]]:
    """(folder, its https base URL, the certificate curl trusts: CURL_CA_BUNDLE)."""
    folder = tmp_path_factory.mktemp("served")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"]
        + ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Files, directory=str(folder)))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield folder, f"https://127.0.0.1:{server.server_address[1]}", cert
    server.shutdown()


PR = 61867  # the PR the events are on, in example/project


@pytest.fixture(scope="module")
def bundles(served: tuple[Path, str, Path]) -> dict[str, Any]:
    """alice's honest bundle for PR, the same run re-signed by mallory, and bundles signed for PR #1:
    one by alice, one by the maintainer maint; each also by its https URL (``url-<name>``)."""
    folder, base, cert = served
    alice, alice_pub = make_key(folder, "alice")
    mallory, _ = make_key(folder, "mallory")
    maint, maint_pub = make_key(folder, "maint")
    _, stranger_pub = make_key(folder, "stranger")
    _GitHub.keys = {"alice": alice_pub, "maint": maint_pub, "stranger": stranger_pub}
    run_dir, _ = build_bundle(folder, None)
    honest = seal_and_pack(run_dir, folder / "bundle.tar.gz", key=alice, subject=f"example/project#{PR}")
    forged = seal_and_pack(run_dir, folder / "forged.tar.gz", key=mallory, subject=f"example/project#{PR}")
    alices_pr1 = seal_and_pack(run_dir, folder / "alice-pr1.tar.gz", key=alice, subject="example/project#1")
    maints_pr1 = seal_and_pack(run_dir, folder / "maint-pr1.tar.gz", key=maint, subject="example/project#1")
    found: dict[str, Any] = {
        "honest": honest.bundle,
        "forged": forged.bundle,
        "alice-pr1": alices_pr1.bundle,
        "maint-pr1": maints_pr1.bundle,
    }
    found |= {f"url-{name}": f"{base}/{path.name}" for name, path in found.items()}
    return found | {"folder": folder, "base": base, "cert": cert}


def _event(folder: Path, body: str, author: str = "alice", number: int = PR) -> Path:
    path = folder / f"event-{abs(hash((body, author, number)))}.json"
    path.write_text(
        json.dumps(
            {
                "action": "opened",
                "pull_request": {"number": number, "user": {"login": author}, "body": body, "head": {"sha": "f" * 40}},
            }
        )
    )
    return path


def _run(event: Path, work: Path, github: str, cert: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CURL_CA_BUNDLE": str(cert),
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


@pytest.fixture()
def pr_checks(tmp_path: Path) -> Callable[[str, str], dict[str, str]]:
    """The PR's claims and policy files, as the workflow passes them (BYOG_CLAIMS, BYOG_POLICY): the
    policy requires gsm8k; each call rewrites the claims file to one gsm8k verdict claim on the
    candidate, ``name`` claiming ``verdict``, and answers the two variables."""
    claims = tmp_path / "claims.yaml"
    policy = tmp_path / "policy.yaml"
    policy.write_text("schema_version: 1\nrequired_tasks: [gsm8k]\n")

    def claiming(name: str, verdict: str) -> dict[str, str]:
        claims.write_text(
            f"schema_version: 1\nclaims:\n  - kind: verdict\n    name: {name}\n    task: gsm8k\n"
            f"    candidate: candidate\n    verdict: {verdict}\n"
        )
        return {"BYOG_CLAIMS": str(claims), "BYOG_POLICY": str(policy)}

    return claiming


def test_a_linked_signed_bundle_verifies_and_the_comment_carries_the_report(
    bundles: dict[str, Path], github: str, tmp_path: Path, pr_checks: Callable[[str, str], dict[str, str]]
) -> None:
    folder = bundles["folder"]
    comments = tmp_path / "comments.json"  # an older link in the body, the newest in a comment: the newest is checked
    comments.write_text(
        json.dumps(
            [
                {"user": {"login": "bob"}, "body": "my own bundle: https://bob.example/not-the-authors.tar.gz"},
                {"user": {"login": "alice"}, "body": f"updated bundle: {bundles['url-honest']}"},
            ]
        )
    )
    event = _event(folder, "Faster decode. Old bundle: https://alice.example/stale.tar.gz")
    work = tmp_path / "work"
    result = _run(
        event,
        work,
        github,
        bundles["cert"],
        BYOG_PR_COMMENTS=str(comments),
        **pr_checks("gsm8k no worse", "equivalent"),
    )
    comment = (work / "comment.md").read_text() if (work / "comment.md").is_file() else ""
    # the claim is a verdict the synthetic bundle does not reach: verify fails it, and says which
    assert result.returncode == 1, result.stdout + result.stderr
    assert comment.startswith(COMMENT_MARKER) and "## byog verify: ❌ not verified (1 check(s) failed)" in comment
    assert (
        "| ✅ ok | signature | signed by alice@\u2060github.com" in comment
        and "| ✅ ok | policy | meets the policy |" in comment
    )
    assert "| ❌ FAIL | claims | claim 'gsm8k no worse': the recomputed verdict is inconclusive |" in comment
    assert (
        (work / "allowed_signers").read_text().startswith('alice@github.com namespaces="byog-bundle@v1" ssh-ed25519 ')
    )
    assert "The report is not shown" in comment and (work / "summary.md").read_text() == comment

    work = tmp_path / "work-2"
    result = _run(
        event,
        work,
        github,
        bundles["cert"],
        BYOG_PR_COMMENTS=str(comments),
        **pr_checks("gsm8k unsure", "inconclusive"),
    )
    comment = (work / "comment.md").read_text()
    assert result.returncode == 0, result.stdout + result.stderr + comment
    assert "## byog verify: ✅ verified" in comment and f"Bundle: `{bundles['url-honest']}`" in comment
    opening, report = comment.split("<details><summary>Full report", 1)
    assert "# byog report: synthetic" in report and "## Performance" in report
    assert "### Headline" in opening  # the headline is on the first screen, not folded
    assert "✅ 1 of 1 claims hold." in opening  # the PR's claims file, judged: held, so counted, not listed
    assert "Plots in the bundle: `plots/" in report and "![" not in comment  # no relative image link to break
    assert "https://github.com/example/project/actions/runs/7" in comment


def test_a_bundle_signed_by_someone_else_fails_the_check(bundles: dict[str, Path], github: str, tmp_path: Path) -> None:
    event = _event(bundles["folder"], f"Bundle: {bundles['url-forged']}")
    result = _run(event, tmp_path / "work", github, bundles["cert"])
    comment = (tmp_path / "work" / "comment.md").read_text()
    assert result.returncode == 1
    assert (
        "❌ not verified" in comment
        and "| ❌ FAIL | signature | signed by key SHA256:" in comment
        and "wrong signer" in comment
    )
    assert "# byog report" not in comment


def test_a_bundle_a_maintainer_signed_for_another_pr_is_not_verified_on_a_strangers(
    bundles, github: str, tmp_path: Path
) -> None:
    """Replay: maint's bundle for PR #1, linked by a stranger on PR; maint's key signs reproductions only."""
    event = _event(bundles["folder"], f"Bundle: {bundles['url-maint-pr1']}", author="stranger")
    result = _run(event, tmp_path / "work", github, bundles["cert"], BYOG_MAINTAINERS="maint")
    comment = (tmp_path / "work" / "comment.md").read_text()
    assert result.returncode == 1, result.stdout + result.stderr + comment
    assert "❌ not verified" in comment and "wrong signer" in comment and "# byog report" not in comment
    assert "maint@github.com" not in (tmp_path / "work" / "allowed_signers").read_text()
    assert "maint@github.com" in (tmp_path / "work" / "reproduction_signers").read_text()


def test_a_bundle_the_author_signed_for_another_pr_is_not_verified_here(bundles, github: str, tmp_path: Path) -> None:
    event = _event(bundles["folder"], f"Bundle: {bundles['url-alice-pr1']}")
    result = _run(event, tmp_path / "work", github, bundles["cert"])
    comment = (tmp_path / "work" / "comment.md").read_text()
    assert result.returncode == 1, result.stdout + result.stderr + comment
    assert (
        "❌ not verified" in comment
        and f"| ❌ FAIL | subject | the bundle is for example/project\\#\u20601, not pull request \\#\u2060{PR}"
        in comment
    )
    assert "# byog report" not in comment

    # the same bundle on the PR it was signed for verifies (with maint trusted for reproductions)
    event = _event(bundles["folder"], f"Bundle: {bundles['url-alice-pr1']}", number=1)
    result = _run(event, tmp_path / "work-1", github, bundles["cert"], BYOG_MAINTAINERS="maint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "## byog verify: ✅ verified" in (tmp_path / "work-1" / "comment.md").read_text()


def test_a_pr_without_a_bundle_is_nothing_to_check_unless_required(bundles, github: str, tmp_path: Path) -> None:
    event = _event(bundles["folder"], "A docs fix, no bundle.")
    assert _run(event, tmp_path / "a", github, bundles["cert"]).returncode == 0
    assert _run(event, tmp_path / "b", github, bundles["cert"], BYOG_REQUIRE_BUNDLE="1").returncode == 1


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


def test_a_multi_part_bundle_is_every_part_the_author_linked() -> None:
    files = "https://github.com/user-attachments/files"
    event = {"pull_request": {"number": 5, "user": {"login": "alice"}, "body": f"{files}/1/run.part0.tar.gz"}}
    comments = [
        {"user": {"login": "alice"}, "body": f"{files}/2/run.part1.tar.gz {files}/3/run.part2.tar.gz"},
        {"user": {"login": "mallory"}, "body": f"{files}/9/run.part2.tar.gz"},  # not the author's
        {"user": {"login": "alice"}, "body": f"{files}/4/other.part3.tar.gz {files}/5/run.part2.tar.gz"},
        {"user": {"login": "alice"}, "body": f"{files}/6/run.part1.tar.gz"},  # the newest part 1
    ]
    found = find_bundles(event, comments)
    assert found.parts == [f"{files}/1/run.part0.tar.gz", f"{files}/6/run.part1.tar.gz", f"{files}/5/run.part2.tar.gz"]
    one = find_bundles({"pull_request": {"number": 5, "user": {"login": "alice"}, "body": f"{files}/1/b.tar.gz"}})
    assert one.parts == [] and one.as_json()["parts"] == []


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


def _hostile_comment(tmp_path: Path) -> str:
    """A verified comment of a bundle whose every string is hostile, one point invalid, rendered by byog."""
    from tests.support.report_runs import INVALID_POINT, SPEC, derive

    run_dir = make_run_dir(tmp_path / "run", SPEC)
    hostile = "@octocat @byog-org/maintainers https://evil.example/phish www.evil.example #12 <img src=x> [x](y)"
    plan = run_dir.plan_yaml.read_text().replace(
        "name: synthetic", f"name: {json.dumps('decode 1.7x faster (B=8) ' + hostile)}"
    )
    atomic_write_text(run_dir.plan_yaml, plan)
    record = json.loads(run_dir.server_record("candidate").read_text())
    record["argv"] = ["vllm", "serve", "x\n```\n## ✅ Approved by @byog-org/maintainers\n```", "--model", hostile]
    record["models"] = {"data": [{"id": hostile}]}
    atomic_write_json(run_dir.server_record("candidate"), record)
    env = json.loads(run_dir.env_json.read_text())
    env["cpu"] = hostile
    atomic_write_json(run_dir.env_json, env)
    claim = {"kind": "ratio", "name": "decode 1.7x faster (B=8) " + hostile, "candidate": "candidate"}
    claim |= {"baseline": "baseline", "select": {"batch_size": 1}, "metric": "decode_tok_s", "value": 1.25}
    claims = {"schema_version": 1, "claims": [claim]}
    atomic_write_text(run_dir.root / "claims.yaml", yaml.safe_dump(claims))
    saturate_client(run_dir, "candidate", INVALID_POINT)
    report = render_report(run_dir, derive(run_dir), ReportInputs(image_base=None))
    verify = {
        "verified": True,
        "signer": "alice@example.com (SHA256:abc)",
        "trust": "trusted",
        "checks": [
            {"name": "signature", "status": "pass", "message": "signed by " + hostile},
            {"name": "subject", "status": "pass", "message": "made for org/repo#1 " + hostile},
            {"name": "policy", "status": "skip", "message": "no policy " + hostile},
        ],
    }
    return comment_body(verify, report, bundle_url="https://example/b.tar.gz", note=hostile)


def test_github_renders_no_mention_link_heading_or_doubled_backslash_from_bundle_text(tmp_path: Path) -> None:
    body = _hostile_comment(tmp_path)
    html = render_gfm(body)
    text = re.sub(r"<[^>]+>", "", html)
    prose = re.sub(r"<(code|pre)>.*?</\1>", "", html, flags=re.S)  # GitHub links nothing inside code
    assert "<a " not in html and "<img" not in html  # no link, no image, from anything the bundle said
    assert not re.search(r"@(octocat|byog-org)", prose)  # every @ is followed by a word joiner: nobody is pinged
    assert not re.search(r"#\d", prose)  # no issue reference
    assert "\\\\" not in text and "\\." not in text and "\\(" not in text  # escaped once: no backslash shows
    assert "decode 1.7x faster (B=8)" in text  # the label reads as it was written
    headings = re.findall(r"<h[1-6]>(.*?)</h[1-6]>", html)
    assert not any("Approved" in h for h in headings)  # the argv cannot close its code and print a heading
    struck = re.findall(r"<del>(.*?)</del>", html)
    assert struck and all("invalid" not in s for s in struck)  # invalid cells struck through ...
    assert html.count("⚠ invalid") >= len(struck) // 2  # ... with their word beside the mark


def test_the_comment_opens_with_one_screen_then_folds_checks_and_report(tmp_path: Path) -> None:
    body = _hostile_comment(tmp_path)
    opening = body.split("<details>", 1)[0]
    before_charts = opening.split("```mermaid", 1)[0]
    assert len([line for line in before_charts.splitlines() if line.strip()]) <= 25
    assert "✅ verified" in opening and "Signed by `alice@example.com (SHA256:abc)`" in opening
    assert "### Headline" in opening and "**What changed**" in opening and "⚠ Invalid point, " in opening
    assert opening.index("**Warnings**") < opening.index("**What changed**")  # warnings before the numbers
    flipped = len(re.findall(r"<details><summary>\d+ items? flipped", body))  # folded inside the report
    charts = 1 if "```mermaid" in body else 0  # the charts back the headline up, folded
    assert "<details open" not in body and body.count("<details>") == 2 + charts + flipped
    for mark, word in (("✅", "ok"), ("➖", "skipped")):
        assert f"| {mark} {word} |" in body


def test_a_report_too_long_for_a_comment_is_named_not_cut_mid_table() -> None:
    verify = {"verified": True, "signer": "alice@example.com (SHA256:abc)", "checks": []}
    report = (
        "<!-- byog report v3 -->\n# byog report: big\n\n## Headline\n\n- ok\n\n## Performance\n\n"
        + "| 1 | 2 |\n" * 8_000
    )
    body = comment_body(verify, report)
    assert len(body) < 65_536 and "| 1 | 2 |" not in body
    assert "The full report (80,0" in body and "does not fit in a comment" in body


def test_bundle_url_takes_only_https_links_whose_path_ends_in_tar_gz() -> None:
    refused = [
        "file:///etc/passwd?.tar.gz",
        "file:///home/runner/work/bundle.tar.gz",
        "http://plain.example/b.tar.gz",
        "https://evil.example/x?.tar.gz",
        "https://evil.example/x#.tar.gz",
        "https://evil.example/x.tar.gz.",
        "https:///b.tar.gz",
        "https://user@evil.example/b.tar.gz",
        "https://evil.example:99999/b.tar.gz",
    ]
    taken = ["https://github.com/user-attachments/files/2/bundle.tar.gz", "https://h.example/b.tar.gz?sig=abc"]
    assert links(" ".join(refused)) == [] and links(" ".join(taken)) == taken


def test_byog_pr_bundle_url_finds_no_bundle_in_a_file_link(tmp_path: Path) -> None:
    event = _event(tmp_path, "Bundle: file:///etc/passwd?.tar.gz")
    done = byog("pr", "bundle-url", "--event", str(event), "--json", timeout=120)
    assert done.returncode != 0 and "file:" not in done.stdout, done.stdout + done.stderr


def _bundle_url_says(tmp_path: Path, url: str) -> str:
    """A BYOG command whose ``pr bundle-url`` answers ``url`` (what a link that slipped past it would
    be) and whose every other command is the real byog: so the script's own fetch is what is tested."""
    wrapper = tmp_path / "byog-says.sh"
    answer = json.dumps({"pr": PR, "author": "alice", "head_sha": None, "bundle": url, "reproductions": []})
    wrapper.write_text(
        f"if [ \"$1 $2\" = 'pr bundle-url' ]; then echo '{answer}'; exit 0; fi\nexec {sys.executable} -m byog \"$@\"\n"
    )
    return f"bash {wrapper}"


@pytest.mark.parametrize("where", ["file", "redirect to http", "redirect to file"])
def test_pr_verify_fetches_only_over_https_even_after_a_redirect(
    bundles: dict[str, Any], github: str, tmp_path: Path, where: str
) -> None:
    honest = bundles["honest"]
    plain = f"{github}/users/alice/ssh_signing_keys"  # an http URL that answers
    url = {
        "file": f"{honest.as_uri()}?.tar.gz",
        "redirect to http": f"{bundles['base']}/b.tar.gz?to={plain}",
        "redirect to file": f"{bundles['base']}/b.tar.gz?to={honest.as_uri()}",
    }[where]
    event = _event(bundles["folder"], "Bundle: see below")
    work = tmp_path / "work"
    result = _run(event, work, github, bundles["cert"], BYOG=_bundle_url_says(tmp_path, url))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "could not be fetched over https" in result.stderr
    fetched = work / "bundle.tar.gz"
    assert not fetched.exists() or fetched.stat().st_size == 0
    assert not (work / "verify.json").exists()


def link_forms_comment() -> str:
    """The comment of a refused, unsigned bundle whose member names and manifest subject carry every
    form GitHub's autolinker links (LINK_FORMS, tests/support/cmark.py)."""
    names = " ".join(LINK_FORMS)
    verify = {
        "verified": False,
        "signer": None,
        "trust": "unsigned",
        "checks": [
            {"name": "subject", "status": "fail", "message": f"the bundle is for {names}, not pull request #5"},
            {"name": f"archive {LINK_FORMS[0]}", "status": "fail", "message": f"member '{names}' is not byog's"},
            *({"name": "members", "status": "fail", "message": f"unexpected member {form}"} for form in LINK_FORMS),
        ],
    }
    return comment_body(verify, None, bundle_url="https://example.test/b.tar.gz")


def test_fail_lines_quote_bundle_text_that_github_cannot_link() -> None:
    html = render_gfm(link_forms_comment())
    assert html.count("<a ") == 0
    visible = unescape(re.sub(r"<[^>]+>", "", html)).replace("\u2060", "")
    assert all(f"unexpected member {form}" in visible for form in LINK_FORMS)


def test_first_screen_shows_each_pairs_difference_and_the_commit_against_the_head() -> None:
    from byog.bundles.pr import comment_body

    verify = {
        "verified": True,
        "checks": [{"name": "pairs", "status": "pass", "message": "x"}, {"name": "commit", "status": "pass"}],
        "details": {
            "pairs": {"pairs": ["cand-fp8kv differs from baseline in: --kv-cache-dtype fp8"], "failed": []},
            "commit": {"measured": ["cand-fp8kv: abc1234"], "head": ["abc1234def"]},
        },
    }
    first_screen = comment_body(verify, None).split("<details>")[0]
    assert "- cand-fp8kv differs from baseline in: --kv-cache-dtype fp8\n" in first_screen
    assert "- Commit measured: cand-fp8kv: abc1234; PR head: `abc1234def`" in first_screen
