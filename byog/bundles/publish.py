"""``byog report`` (report.md + plots for a run directory or a bundle) and ``byog attach`` (to a PR).

``byog attach`` verifies the bundle first (for OWNER/REPO#PR when the repository is known, so a
bundle made for another PR is refused) and posts nothing unless it verifies. What it posts is
the report re-rendered by verify from the recomputed numbers, laid out as the PR workflow's
comment, with every string that came from the bundle escaped once where it enters the markdown
(``byog.core.safe_text``): a field cannot add links, images, HTML or pings to the comment.

``byog report BUNDLE`` re-renders the bundle's report with what a reviewer may add: the PR's
claims file (``--claims``), reproductions of the bundle (``--reproduction``, and any
``<bundle>.reproduction*.tar.gz`` found beside it), and where the plots are hosted
(``--image-base``). A reproduction is shown only when it verifies as any bundle does (a trusted
signer, then every content check in verify's limited child, which also reads its
reproduction.json) and was made of this very bundle (its record names the bundle's manifest
hash); any other is named and skipped in one line. A bundle is verified before its report is written, and the report
is rendered by verify's limited child from the recomputed numbers.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml
from pydantic import ValidationError

from byog.bundles.pr import comment_body as pr_comment_body
from byog.bundles.unpack import Extracted
from byog.bundles.verify import VerifyReport, verify_bundle
from byog.core.errors import ByogError, CheckFailed, EnvironmentProblem, UsageError
from byog.core.io import atomic_write_text
from byog.core.paths import MANIFEST_NAME, PLOTS_BASE, RunDir
from byog.core.safe_text import md_code, one_line
from byog.report.context import ReportInputs, ReproductionView
from byog.report.markdown import render_report
from byog.report.plots import write_plots
from byog.schemas.claims import Claim, ClaimsFile
from byog.schemas.manifest import BundleSubject
from byog.schemas.summary import read_summary

REPRODUCTION_GLOB = "{stem}.reproduction*.tar.gz"


@dataclass(frozen=True)
class ReportWritten:
    report_md: Path
    plots: list[Path]
    reproductions: int = 0
    not_shown: tuple[str, ...] = ()  # one line per reproduction that did not verify, or is of another bundle


def load_claims(path: Path | None) -> tuple[Claim, ...]:
    if path is None:
        return ()
    if not path.is_file():
        raise UsageError(f"claims file {path} does not exist")
    try:
        return tuple(ClaimsFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).claims)
    except yaml.YAMLError as err:
        raise UsageError(f"{path} is not valid YAML: {err}") from None
    except ValidationError as err:
        first = err.errors()[0]
        raise UsageError(
            f"{path}: '{'.'.join(str(x) for x in first['loc']) or '(top level)'}': {first['msg']}"
        ) from None


def _stem(bundle: Path) -> str:
    return bundle.name.removesuffix(".tar.gz").removesuffix(".tgz")


def reproductions_beside(bundle: Path) -> list[Path]:
    """``<bundle>.reproduction*.tar.gz`` next to the bundle, sorted."""
    return sorted(bundle.parent.glob(REPRODUCTION_GLOB.format(stem=_stem(bundle))))


class ReproductionNotShown(CheckFailed):
    """A reproduction beside or given to ``byog report`` that is not shown, and why (one sentence)."""


def load_reproduction(
    path: Path, manifest_sha256: str, allowed_signers: Path | None, *, allow_unsigned: bool = False
) -> ReproductionView:
    """A reproduction bundle of the bundle whose manifest hashes to ``manifest_sha256``, verified.

    The same gated, bounded verify as any bundle: a signer missing from the allowed signers gets
    no content check, so its reproduction.json is never parsed; a trusted one's is read by
    verify's limited child, after the bounds check. ReproductionNotShown says why one is not shown.
    """
    if not path.is_file():
        raise UsageError(f"reproduction {path} does not exist")
    report = verify_bundle(path, allowed_signers=allowed_signers, allow_unsigned=allow_unsigned, want_reproduction=True)
    if not report.verified:
        why = report.failures[0] if report.failures else "it does not verify"
        raise ReproductionNotShown(f"reproduction {path.name} not shown: {one_line(why, 200)}")
    view = report.reproduction
    if view is None:
        raise ReproductionNotShown(f"reproduction {path.name} not shown: it is a bundle but not a reproduction")
    if view.record.original.manifest_sha256 != manifest_sha256:
        raise ReproductionNotShown(
            f"reproduction {path.name} not shown: it reproduces another bundle "
            f"(manifest {view.record.original.manifest_sha256[:12]}…)"
        )
    principal = report.signer.split(" (SHA256:")[0] if report.trust == "signed" and report.signer else None
    return replace(view, principal=principal)


def _shown(
    paths: Sequence[Path], manifest_sha256: str, allowed_signers: Path | None, allow_unsigned: bool
) -> tuple[tuple[ReproductionView, ...], tuple[str, ...]]:
    """(the reproductions shown, one line for each that is not)."""
    views: list[ReproductionView] = []
    skipped: list[str] = []
    for path in paths:
        try:
            views.append(load_reproduction(path, manifest_sha256, allowed_signers, allow_unsigned=allow_unsigned))
        except ReproductionNotShown as why:
            skipped.append(str(why))
    return tuple(views), tuple(skipped)


def _write(run_dir: RunDir, out_dir: Path, inputs: ReportInputs) -> ReportWritten:
    if not run_dir.summary_json.is_file():
        raise UsageError(f"{run_dir.root} has no summary.json; run `byog derive {run_dir.root}` first")
    summary = read_summary(run_dir.summary_json)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "report.md"
    atomic_write_text(report, render_report(run_dir, summary, inputs))
    return ReportWritten(
        report_md=report,
        plots=write_plots(run_dir, summary, out_dir / "plots"),
        reproductions=len(inputs.reproductions),
    )


def write_report(
    target: Path,
    out_dir: Path | None = None,
    *,
    claims: Path | None = None,
    reproductions: Sequence[Path] = (),
    image_base: str | None = PLOTS_BASE,
    allowed_signers: Path | None = None,
    allow_unsigned: bool = False,
) -> ReportWritten:
    """A run directory: report.md and plots/ inside it (or OUT). A bundle: verified first, then
    report.md and the plots rendered by verify's limited child from the recomputed numbers into
    OUT (default <bundle>-report/), with the reproductions given and those found beside it; a
    bundle that does not verify gets no report."""
    extra = load_claims(claims)
    if target.is_dir():
        run_dir = RunDir(target)
        attached: tuple[ReproductionView, ...] = ()
        not_shown: tuple[str, ...] = ()
        if reproductions:
            manifest = run_dir.root / MANIFEST_NAME
            if not manifest.is_file():
                raise UsageError(
                    f"{target} is not sealed (no {MANIFEST_NAME}): a reproduction names the manifest it reproduced"
                )
            digest = hashlib.sha256(manifest.read_bytes()).hexdigest()
            attached, not_shown = _shown(reproductions, digest, allowed_signers, allow_unsigned)
        written = _write(
            run_dir, out_dir or target, ReportInputs(claims=extra, reproductions=attached, image_base=image_base)
        )
        return replace(written, not_shown=not_shown)
    if not target.is_file():
        raise UsageError(f"{target} is neither a run directory nor a bundle file")
    out = out_dir or target.parent / f"{_stem(target)}-report"
    found = list(dict.fromkeys([*reproductions, *reproductions_beside(target)]))
    views: tuple[ReproductionView, ...] = ()
    not_shown = ()
    if found:
        # Only the gate members are read (nothing written): the manifest's hash names the bundle, and the
        # reproductions are shown only if verify below then trusts it.
        with Extracted(
            target, gate_only=True, keep=frozenset({MANIFEST_NAME}), legacy_order=allow_unsigned
        ) as extracted:
            digest = hashlib.sha256(extracted.held.get(MANIFEST_NAME, b"")).hexdigest()
        views, not_shown = _shown(found, digest, allowed_signers, allow_unsigned)
    inputs = ReportInputs(claims=extra, reproductions=views, image_base=image_base)
    report = verify_bundle(
        target, allowed_signers=allowed_signers, allow_unsigned=allow_unsigned, report_to=out, report_inputs=inputs
    )
    if not report.verified or not report.written:
        first = (
            report.failures[0]
            if report.failures
            else f"the report could not be written ({report.render_error or 'no reason given'})"
        )
        raise CheckFailed(f"{target} does not verify, so no report was written: {one_line(first, 300)}")
    return ReportWritten(
        report_md=Path(report.written[0]),
        plots=[Path(p) for p in report.written[1:]],
        reproductions=len(views),
        not_shown=not_shown,
    )


def comment_body(bundle: Path, report: VerifyReport) -> str:
    """The PR comment: the same layout as the PR workflow's (``byog.bundles.pr.comment_body``), then how to check it."""
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    body = pr_comment_body(report.as_json(), report.comment, bundle_url=bundle.name, bundle_sha256=digest, marker=False)
    check = md_code(f"byog verify {bundle.name} --allowed-signers allowed_signers")
    return f"{body.rstrip()}\n\nThe bundle is attached to this PR. Check it with {check}.\n"


def _gh_repository(gh: str | None) -> str | None:
    """OWNER/NAME of the current repository, as gh sees it; None without gh or outside a repository."""
    if gh is None:
        return None
    result = subprocess.run(
        [gh, "repo", "view", "--json", "nameWithOwner", "-q", ".nameWithOwner"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    name = result.stdout.strip()
    return name if result.returncode == 0 and "/" in name else None


def attach(
    bundle: Path,
    pr: int,
    repo: str | None = None,
    *,
    allowed_signers: Path | None = None,
    policy: Path | None = None,
    claims: Path | None = None,
    allow_unsigned: bool = False,
) -> str:
    """Verify the bundle (for OWNER/REPO#PR when the repository is known), then post the re-rendered
    report as a PR comment with gh; return what the user must still do. Without gh the comment is
    still written beside the bundle, and the EnvironmentProblem (exit 3) says how to post it by hand.

    Nothing is posted for a bundle that does not verify. GitHub's API has no upload for PR
    attachments, so the bundle itself is always attached by hand.
    """
    if not bundle.is_file():
        raise UsageError(f"bundle {bundle} does not exist")
    if pr <= 0:
        raise UsageError("--pr must be a pull request number")
    gh = shutil.which("gh")
    repository = repo or _gh_repository(gh)
    subject = None
    if repository is not None:
        try:
            subject = BundleSubject(repository=repository, pr=pr)
        except ValueError:
            raise UsageError(f"--repo '{repository}' is not OWNER/NAME") from None
    report = verify_bundle(
        bundle,
        allowed_signers=allowed_signers,
        policy=policy,
        claims=claims,
        allow_unsigned=allow_unsigned,
        subject_for=subject,
        want_comment=True,
    )
    if not report.verified or report.comment is None:
        first = (
            report.failures[0]
            if report.failures
            else f"the report could not be rendered ({report.render_error or 'no reason given'})"
        )
        raise CheckFailed(f"{bundle} does not verify, so nothing was posted: {one_line(first, 300)}")
    body = comment_body(bundle, report)
    body_file = bundle.parent / f"{bundle.name}.comment.md"
    atomic_write_text(body_file, body)
    repo_args = ["--repo", repository] if repository else []
    drag = f"drag {bundle} into a comment box of PR #{pr} (GitHub takes .tar.gz attachments up to 25 MB) and post it"
    unchecked = "" if subject else " (its subject was not checked: pass --repo OWNER/NAME)"
    if gh is None:
        posting = " ".join(["gh pr comment", str(pr), *repo_args, "--body-file", str(body_file)])
        raise EnvironmentProblem(
            f"the bundle verified{unchecked}, but gh (GitHub CLI) is not installed, so nothing was posted: "
            f"paste {body_file} (the re-rendered report plus the bundle's sha256) as a comment on PR #{pr} "
            f"and {drag}, or install gh and run `{posting}`"
        )
    result = subprocess.run(
        [gh, "pr", "comment", str(pr), *repo_args, "--body-file", str(body_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise ByogError(
            f"gh pr comment {pr} failed: {detail[-1] if detail else 'no output'}; the comment is in {body_file}"
        )
    return (
        f"verified{unchecked}; posted the report to PR #{pr}: {result.stdout.strip()}\nNow {drag} (GitHub's API "
        "cannot upload PR attachments)."
    )
