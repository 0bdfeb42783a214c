"""`byog pr bundle-url`, `byog pr comment`: the steps of the PR workflow that are not plain byog commands."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import typer

from byog.cli.common import JsonOpt, OutOpt, command, console, print_json
from byog.cli.console_reporter import say
from byog.core.errors import UsageError
from byog.core.io import atomic_write_text

pr_app = typer.Typer(help="The PR workflow's steps (docs/pr-workflow.md).", no_args_is_help=True)


@command(pr_app, "bundle-url")
def bundle_url_cmd(
    event: Path = typer.Option(..., "--event", help="The GitHub event payload ($GITHUB_EVENT_PATH)."),
    comments: Path | None = typer.Option(
        None, "--comments", help="The PR's comments as GET /repos/O/R/issues/N/comments lists them."
    ),
    as_json: JsonOpt = False,
) -> None:
    """Print the newest bundle link the PR's author posted (body or comments); exit 2 when there is none."""
    from byog.bundles.pr import read_event

    found = read_event(event, comments)
    if as_json:
        print_json(found.as_json())
    elif found.bundle:
        say(console, found.bundle)  # the PR author's text: escaped like any other
    if not found.bundle:
        raise UsageError(f"PR #{found.pr} links no bundle (.tar.gz) posted by its author {found.author}")


@command(pr_app, "comment")
def comment_cmd(
    verify: Path = typer.Option(..., "--verify", help="The output of byog verify --json."),
    report: Path | None = typer.Option(None, "--report", help="The re-rendered report.md (shown only when verified)."),
    bundle: Path | None = typer.Option(None, "--bundle", help="The bundle file, to print its sha256."),
    bundle_url: str | None = typer.Option(None, "--bundle-url", help="Where the bundle was fetched from."),
    run_url: str | None = typer.Option(None, "--run-url", help="This workflow run's URL."),
    note: str | None = typer.Option(None, "--note", help="One more line to show under the checks."),
    out: OutOpt = None,
) -> None:
    """Write the PR comment: verify's verdict and every check, then the re-rendered report."""
    from byog.bundles.pr import comment_body

    try:
        result = json.loads(verify.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"{verify} is not byog verify --json output: {err}") from None
    text = report.read_text(encoding="utf-8") if report and report.is_file() else None
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest() if bundle and bundle.is_file() else None
    body = comment_body(result, text, bundle_url=bundle_url, bundle_sha256=digest, run_url=run_url, note=note)
    if out:
        atomic_write_text(out, body)
    else:
        typer.echo(body, nl=False)
