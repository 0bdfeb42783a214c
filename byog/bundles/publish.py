"""``byog report`` (report.md + plots for a run directory or a bundle) and ``byog attach`` (to a PR)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from byog.bundles.report import render_report, write_plots
from byog.bundles.rundir import RunDir
from byog.bundles.unpack import Extracted
from byog.errors import ByogError, UsageError
from byog.ioutil import atomic_write_text, read_json


@dataclass(frozen=True)
class ReportWritten:
    report_md: Path
    plots: list[Path]


def _write(run_dir: RunDir, out_dir: Path) -> ReportWritten:
    if not run_dir.summary_json.is_file():
        raise UsageError(f"{run_dir.root} has no summary.json; run `byog compare {run_dir.root}` first")
    summary = read_json(run_dir.summary_json)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "report.md"
    atomic_write_text(report, render_report(run_dir, summary))
    return ReportWritten(report_md=report, plots=write_plots(run_dir, summary, out_dir / "plots"))


def write_report(target: Path, out_dir: Path | None = None) -> ReportWritten:
    """A run directory: report.md and plots/ inside it (or OUT). A bundle: into OUT (default <bundle>-report/)."""
    if target.is_dir():
        return _write(RunDir(target), out_dir or target)
    if not target.is_file():
        raise UsageError(f"{target} is neither a run directory nor a bundle file")
    default = target.parent / f"{target.name.removesuffix('.tar.gz').removesuffix('.tgz')}-report"
    with Extracted(target) as extracted:
        assert extracted.root is not None
        return _write(RunDir(extracted.root), out_dir or default)


def _bundle_report(bundle: Path) -> str:
    with Extracted(bundle) as extracted:
        assert extracted.root is not None
        path = extracted.root / "report.md"
        if not path.is_file():
            raise UsageError(f"{bundle} has no report.md")
        return path.read_text(encoding="utf-8")


def comment_body(bundle: Path, report: str) -> str:
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    return (
        f"{report.rstrip()}\n\n---\nbyog bundle `{bundle.name}` (sha256 `{digest}`), attached to this PR. "
        f"Check it with `byog verify {bundle.name} --allowed-signers allowed_signers`.\n"
    )


def attach(bundle: Path, pr: int, repo: str | None = None) -> str:
    """Post report.md as a PR comment with gh when it is installed; return what the user must still do.

    GitHub's API has no upload for PR attachments, so the bundle itself is always attached by hand.
    """
    if not bundle.is_file():
        raise UsageError(f"bundle {bundle} does not exist")
    if pr <= 0:
        raise UsageError("--pr must be a pull request number")
    body = comment_body(bundle, _bundle_report(bundle))
    body_file = bundle.parent / f"{bundle.name}.comment.md"
    atomic_write_text(body_file, body)
    repo_args = ["--repo", repo] if repo else []
    drag = f"drag {bundle} into a comment box of PR #{pr} (GitHub takes .tar.gz attachments up to 25 MB) and post it"
    gh = shutil.which("gh")
    if gh is None:
        return (
            "gh (GitHub CLI) is not installed, so nothing was posted. To attach by hand:\n"
            f"  1. {drag};\n"
            f"  2. paste {body_file} (report.md plus the bundle's sha256) as a comment on PR #{pr}.\n"
            f"With gh installed: gh pr comment {pr} {' '.join(repo_args)} --body-file {body_file}".replace("  --", " --")
        )
    result = subprocess.run([gh, "pr", "comment", str(pr), *repo_args, "--body-file", str(body_file)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise ByogError(f"gh pr comment {pr} failed: {detail[-1] if detail else 'no output'}; the comment is in {body_file}")
    return f"posted report.md to PR #{pr}: {result.stdout.strip()}\nNow {drag} (GitHub's API cannot upload PR attachments)."
