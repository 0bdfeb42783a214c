"""The PR workflow's own logic (``.github/workflows/byog-verify.yml``, ``scripts/pr-verify.sh``):
which bundle a pull request links, and the comment that reports what verify found.

Kept out of the workflow's YAML so it runs, and is tested, anywhere: ``byog pr bundle-url``
reads a GitHub event payload (and optionally the PR's comments as the REST API lists them) and
prints the bundle to fetch; ``byog pr comment`` turns ``byog verify --json`` and the re-rendered
report.md into the comment body. Everything here treats PR text and bundle text as untrusted:
links are taken only as https URLs whose path ends in .tar.gz (a query may follow it, never
stand in for it), a bundle only from the PR's author, and every string verify reports is
escaped before it becomes markdown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from byog.core.errors import UsageError
from byog.core.safe_text import md_code, md_text
from byog.report.format import table

COMMENT_MARKER = "<!-- byog-verify -->"  # the workflow edits its previous comment instead of adding one
# A candidate runs to the first space, bracket or quote (markdown's delimiters of a link).
_CANDIDATE = re.compile(r"(?i)https://[^\s()<>\[\]\"'`]+")
_BUNDLE_PATH = (".tar.gz", ".tgz")
_REPRODUCTION = re.compile(r"\.reproduction[^/]*\.(?:tar\.gz|tgz)$")
_PART_FILE = re.compile(r"^(?P<stem>[A-Za-z0-9_-][A-Za-z0-9._-]{0,100})\.part(?P<index>0|[1-9][0-9]{0,2})\.tar\.gz$")


@dataclass
class PrBundles:
    pr: int
    author: str
    head_sha: str | None
    bundle: str | None  # the newest bundle link the author posted (comments, then the PR body)
    reproductions: list[str] = field(default_factory=list)  # links to <bundle>.reproduction*.tar.gz, from anyone
    # a multi-part bundle (the newest link is X.partK.tar.gz): the author's newest link to each part of X
    # (part 0 first); the workflow fetches every one under its own name
    parts: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "pr": self.pr,
            "author": self.author,
            "head_sha": self.head_sha,
            "bundle": self.bundle,
            "reproductions": self.reproductions,
            "parts": self.parts,
        }


def links(text: str | None) -> list[str]:
    """The bundle links in PR text: https only (curl fetches nothing else), to a host, with a path
    that ends in .tar.gz, so ``https://x/y?.tar.gz`` or ``file:///…`` is never fetched."""
    return [url for url in _CANDIDATE.findall(text or "") if _is_bundle_link(url)]


def _is_bundle_link(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError:
        return False
    plain = url.isascii() and url.isprintable() and "\\" not in url and "@" not in parts.netloc
    return plain and parts.scheme == "https" and bool(parts.hostname) and parts.path.lower().endswith(_BUNDLE_PATH)


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
    bundle, reproductions, own = None, [], []
    for who, text in texts:
        for link in links(text):
            if _REPRODUCTION.search(urlsplit(link).path):
                reproductions.append(link)
            elif who == author:
                bundle = link  # the newest wins
                own.append(link)
    return PrBundles(
        pr=pr["number"],
        author=author,
        head_sha=head.get("sha") if isinstance(head.get("sha"), str) else None,
        bundle=bundle,
        reproductions=list(dict.fromkeys(reproductions)),
        parts=_parts_of(bundle, own),
    )


def part_file(url: str) -> tuple[str, int] | None:
    """(stem, index) of a link to a part ``X.partK.tar.gz`` whose name is plain letters, digits, '.', '_', '-'."""
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    match = _PART_FILE.match(name)
    return (match["stem"], int(match["index"])) if match else None


def _parts_of(bundle: str | None, own: list[str]) -> list[str]:
    """The author's newest link to each part of the bundle's set (attachments of one set have different
    folders, so a part is known by its file name), part 0 first; empty for a one-part bundle."""
    chosen = part_file(bundle) if bundle else None
    if chosen is None:
        return []
    newest: dict[int, str] = {}
    for link in own:
        found = part_file(link)
        if found is not None and found[0] == chosen[0]:
            newest[found[1]] = link
    return [newest[k] for k in sorted(newest)]


def read_event(path: Path, comments: Path | None = None) -> PrBundles:
    try:
        event = json.loads(path.read_text(encoding="utf-8"))
        listed = json.loads(comments.read_text(encoding="utf-8")) if comments else None
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot read the event or comments JSON: {err}") from None
    if not isinstance(event, dict) or (listed is not None and not isinstance(listed, list)):
        raise UsageError("the event must be a JSON object and the comments a JSON list")
    return find_bundles(event, listed)


STATUS = {"pass": "✅ ok", "skip": "➖ skipped", "fail": "❌ FAIL"}  # a word beside every mark
HEADLINE_ROWS = 10  # claims and verdicts shown above the fold; the full report lists them all
COMMENT_LIMIT = 65_536  # characters GitHub accepts in a comment
_SECTION = re.compile(r"^## ", re.M)


def report_sections(report: str) -> dict[str, str]:
    """report.md by its ``## `` sections (title -> text with its heading), "" for what precedes the first.

    The report is byog's own re-render, in which every bundle string is one escaped line, so a
    line that starts with ``## `` is always a heading the renderer wrote.
    """
    starts = [m.start() for m in _SECTION.finditer(report)]
    out = {"": report[: starts[0]] if starts else report}
    for begin, end in zip(starts, [*starts[1:], len(report)], strict=True):
        text = report[begin:end]
        out[text.split("\n", 1)[0][3:].strip()] = text
    return out


def _headline(section: str) -> list[str]:
    """The Headline section without its heading, its claims table cut to HEADLINE_ROWS rows."""
    lines = section.strip().split("\n")[1:]
    while lines and not lines[0].strip():
        lines.pop(0)
    rows = [i for i, line in enumerate(lines) if line.startswith("| ")][2:]  # after the header and the rule
    if len(rows) > HEADLINE_ROWS:
        cut = rows[HEADLINE_ROWS:]
        more = f"… and {len(cut)} more claims and verdicts in the full report below."
        lines = [*lines[: rows[HEADLINE_ROWS]], "", more, *lines[cut[-1] + 1 :]]
    return lines


def _details(summary: str, body: list[str]) -> list[str]:
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""]


def launch_lines(verify: dict[str, Any]) -> list[str]:
    """The first screen's pair lines (what each pair's launches differ in) and the commit measured
    against the PR's head, from verify's ``pairs`` and ``commit`` checks."""
    found = verify.get("details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    pair_check = details.get("pairs")
    pairs = pair_check.get("pairs") if isinstance(pair_check, dict) else None
    lines = [f"- {md_text(line, 300)}" for line in pairs or [] if isinstance(line, str)]
    derived = pair_check.get("derived") if isinstance(pair_check, dict) else None
    folded = [f"- {md_text(line, 300)}" for line in derived or [] if isinstance(line, str)]
    commit_check = details.get("commit")
    commit: dict[str, Any] = commit_check if isinstance(commit_check, dict) else {}
    measured = [m for m in commit.get("measured") or [] if isinstance(m, str)]
    head = [h for h in commit.get("head") or [] if isinstance(h, str)]
    if measured:
        shown = "; ".join(md_text(m, 120) for m in measured)
        lines.append(f"- Commit measured: {shown}; PR head: {md_code(head[0]) if head else 'not given'}")
    if folded:  # a flag's derived config differences, each line's "+N derived" in full
        lines += ["", *_details(f"Derived differences ({len(folded)}), as vLLM resolved them", folded)[:-1]]
    return [*lines, ""] if lines else []


def _failed_items(verify: dict[str, Any], check: dict[str, Any]) -> list[str]:
    """Every failure a check named in verify --json's details, when it named more than one."""
    details = verify.get("details")
    found = details.get(str(check.get("name"))) if isinstance(details, dict) else None
    failed = found.get("failed") if isinstance(found, dict) else None
    items = [item for item in failed if isinstance(item, str)] if isinstance(failed, list) else []
    return items if len(items) > 1 else []


def _title(verify: dict[str, Any], failed: int) -> str:
    if not verify.get("verified"):
        return f"❌ not verified ({failed} check(s) failed)"
    if verify.get("trust") == "unsigned":
        return "⚠️ verified UNSIGNED (content checked, no trusted signer)"
    return "✅ verified"


def _signer_line(verify: dict[str, Any], checks: list[dict[str, Any]]) -> str:
    """Who signed, then the subject check's message (marked when it failed)."""
    signer = verify.get("signer")
    who = f"Signed by {md_code(signer)}" if signer else "Signed by: nobody verified"
    subject = next((c for c in checks if c.get("name") == "subject"), None)
    if subject and subject.get("status") == "pass":
        who += f"; {md_text(subject.get('message', ''))}"
    elif subject and subject.get("status") == "fail":
        who += f"; ❌ FAIL subject: {md_text(subject.get('message', ''))}"
    return who


def comment_body(
    verify: dict[str, Any],
    report: str | None,
    *,
    bundle_url: str | None = None,
    bundle_sha256: str | None = None,
    run_url: str | None = None,
    note: str | None = None,
    marker: bool = True,
) -> str:
    """The PR comment: one screen first (verdict, signer and subject, the report's headline), then
    the report's charts, then the checks and the full report folded (only when verified)."""
    verified = bool(verify.get("verified"))
    checks = [c for c in verify.get("checks", []) if isinstance(c, dict)]
    counts = {status: sum(1 for c in checks if c.get("status") == status) for status in STATUS}
    lines = [COMMENT_MARKER] if marker else []
    lines += [f"## byog verify: {_title(verify, counts['fail'])}", ""]
    lines += [_signer_line(verify, checks) + ".", ""]
    if bundle_url:
        digest = f" (sha256 {md_code(bundle_sha256)})" if bundle_sha256 else ""
        lines += [f"Bundle: {md_code(bundle_url)}{digest}", ""]
    lines += launch_lines(verify)
    failed = [c for c in checks if c.get("status") == "fail"]
    if failed:
        for c in failed:
            lines.append(f"- ❌ FAIL {md_text(c.get('name', '?'))}: {md_text(c.get('message', ''), 300)}")
            lines += [f"  - {md_text(item, 300)}" for item in _failed_items(verify, c)]
        lines.append("")
    if note:
        lines += [md_text(note, 500), ""]
    sections = report_sections(report) if report is not None and verified else {}
    if "Headline" in sections:
        lines += ["### Headline", "", *_headline(sections["Headline"]), ""]
    elif report is None or not verified:
        lines += ["The report is not shown: its numbers are only worth reading once the bundle verifies.", ""]
    charts = sections.get("Charts", "")
    if "```mermaid" in charts:  # folded: the first screen is the headline; a chart backs it up
        lines += _details("Charts", charts.rstrip().split("\n")[1:])
    summary = ", ".join(f"{counts[s]} {STATUS[s].split(' ', 1)[1]}" for s in STATUS)
    rows = [
        [STATUS.get(str(c.get("status")), "? unknown"), md_text(c.get("name", "?")), md_text(c.get("message", ""), 500)]
        for c in checks
    ]
    lines += _details(f"Checks: {summary}", table(["", "Check", "Result"], rows))
    if sections:
        folded = "```mermaid" in charts  # charts with a chart are folded above; plot names alone stay in the report
        rest = "".join(text for title, text in sections.items() if title != "Charts" or not folded).rstrip()
        room = COMMENT_LIMIT - len("\n".join(lines)) - 1_000  # what follows the report is under 1,000 characters
        if len(rest) > room:
            rest = f"The full report ({len(rest):,} characters) does not fit in a comment: see `byog report`'s output."
        lines += _details("Full report, re-rendered by byog from the verified bundle", [rest])
    if run_url:
        lines += [f"Workflow run (plots and the full output are its artifacts): {md_code(run_url)}", ""]
    return "\n".join(lines)
