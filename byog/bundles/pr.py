"""The PR workflow's own logic (``.github/workflows/byog-verify.yml``, ``scripts/pr-verify.sh``):
which bundle a pull request links, and the comment that reports what verify found.

Kept out of the workflow's YAML so it runs, and is tested, anywhere: ``byog pr bundle-url``
reads a GitHub event payload (and optionally the PR's comments as the REST API lists them) and
prints the bundle to fetch; ``byog pr comment`` turns ``byog verify --json`` and the re-rendered
report.md into the comment body. Everything here treats PR text and bundle text as untrusted:
links are taken only as https URLs (or file:// for local runs) ending in .tar.gz, a bundle only
from the PR's author, and every string verify reports is escaped before it becomes markdown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from byog.core.errors import UsageError
from byog.report.format import code, esc

COMMENT_MARKER = "<!-- byog-verify -->"  # the workflow edits its previous comment instead of adding one
_LINK = re.compile(r"(?:https://|file:///)[^\s()<>\[\]\"'`]+?\.(?:tar\.gz|tgz)(?=[\s()<>\[\]\"'`]|$)")
_REPRODUCTION = re.compile(r"\.reproduction[^/]*\.(?:tar\.gz|tgz)$")


@dataclass
class PrBundles:
    pr: int
    author: str
    head_sha: str | None
    bundle: str | None  # the newest bundle link the author posted (comments, then the PR body)
    reproductions: list[str] = field(default_factory=list)  # links to <bundle>.reproduction*.tar.gz, from anyone

    def as_json(self) -> dict[str, Any]:
        return {
            "pr": self.pr,
            "author": self.author,
            "head_sha": self.head_sha,
            "bundle": self.bundle,
            "reproductions": self.reproductions,
        }


def links(text: str | None) -> list[str]:
    return _LINK.findall(text or "")


def _login(obj: Any) -> str | None:
    user = obj.get("user") if isinstance(obj, dict) else None
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else None


def find_bundles(event: dict[str, Any], comments: list[dict[str, Any]] | None = None) -> PrBundles:
    """The bundle (and reproductions) a PR links, from a pull_request / issue_comment event payload."""
    pr = event.get("pull_request") or event.get("issue")
    if not isinstance(pr, dict) or not isinstance(pr.get("number"), int):
        raise UsageError("the event payload has no pull request (pull_request or issue_comment on a PR expected)")
    author = _login(pr)
    if author is None:
        raise UsageError("the event payload names no pull request author")
    head = pr.get("head")
    head = head if isinstance(head, dict) else {}
    texts: list[tuple[str | None, str]] = [(author, pr.get("body") or "")]  # oldest first
    thread = list(comments or [])
    if isinstance(event.get("comment"), dict) and event["comment"] not in thread:
        thread.append(event["comment"])
    texts += [(_login(c), c.get("body") or "") for c in thread if isinstance(c, dict)]
    bundle, reproductions = None, []
    for who, text in texts:
        for link in links(text):
            if _REPRODUCTION.search(link):
                reproductions.append(link)
            elif who == author:
                bundle = link  # the newest wins
    return PrBundles(
        pr=pr["number"],
        author=author,
        head_sha=head.get("sha") if isinstance(head.get("sha"), str) else None,
        bundle=bundle,
        reproductions=list(dict.fromkeys(reproductions)),
    )


def read_event(path: Path, comments: Path | None = None) -> PrBundles:
    try:
        event = json.loads(path.read_text(encoding="utf-8"))
        listed = json.loads(comments.read_text(encoding="utf-8")) if comments else None
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot read the event or comments JSON: {err}") from None
    if not isinstance(event, dict) or (listed is not None and not isinstance(listed, list)):
        raise UsageError("the event must be a JSON object and the comments a JSON list")
    return find_bundles(event, listed)


STATUS = {"pass": "✅", "skip": "➖", "fail": "❌"}


def comment_body(
    verify: dict[str, Any],
    report: str | None,
    *,
    bundle_url: str | None = None,
    bundle_sha256: str | None = None,
    run_url: str | None = None,
    note: str | None = None,
) -> str:
    """The PR comment: verify's verdict and checks, then (only when verified) the re-rendered report."""
    verified = bool(verify.get("verified"))
    checks = [c for c in verify.get("checks", []) if isinstance(c, dict)]
    failed = sum(1 for c in checks if c.get("status") == "fail")
    title = "✅ verified" if verified else f"❌ not verified ({failed} check(s) failed)"
    lines = [COMMENT_MARKER, f"## byog verify: {title}", ""]
    if bundle_url:
        digest = f" (sha256 {code(bundle_sha256)})" if bundle_sha256 else ""
        lines.append(f"Bundle: {code(bundle_url)}{digest}")
    signer = verify.get("signer")
    lines.append(f"Signed by: {code(signer)}" if signer else "Signed by: nobody verified")
    lines.append("")
    lines += ["| | Check | Result |", "|---|---|---|"]
    for c in checks:
        message = esc(str(c.get("message", ""))).replace("|", "\\|")
        lines.append(f"| {STATUS.get(str(c.get('status')), '?')} | {esc(c.get('name', '?'))} | {message} |")
    lines.append("")
    if note:
        lines += [esc(note), ""]
    if report is None or not verified:
        lines += ["The report is not shown: its numbers are only worth reading once the bundle verifies.", ""]
    else:
        lines += [
            "<details open><summary>Report, re-rendered by byog from the verified bundle</summary>",
            "",
            report.rstrip(),
            "",
            "</details>",
            "",
        ]
    if run_url:
        lines += [f"Workflow run (plots and the full output are its artifacts): {run_url}", ""]
    return "\n".join(lines)
