"""`byog bundle pack`, `verify`, `report`, `keys add`, `attach`: the signed bundle and its reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from byog.cli.common import (
    AllowedSignersOpt,
    ForOpt,
    JsonOpt,
    OutOpt,
    command,
    console,
)
from byog.cli.console_reporter import say
from byog.core.errors import CheckFailed
from byog.core.io import sha256_file
from byog.core.paths import PLOTS_BASE, RunDir
from byog.core.safe_text import terminal_text

if TYPE_CHECKING:
    from byog.bundles.verify import VerifyReport

PolicyOpt = Annotated[
    Path | None,
    typer.Option("--policy", help="Policy YAML: allowed image digests, required points/tasks, minimum samples."),
]
ClaimsOpt = Annotated[Path | None, typer.Option("--claims", help="Claims YAML: the numbers a PR states.")]
AllowUnsignedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-unsigned", help="Check an unsigned bundle's content instead of failing it (the verdict says so)."
    ),
]
VerifyForOpt = Annotated[
    str | None,
    typer.Option(
        "--for",
        help="OWNER/REPO#PR, OWNER/REPO#PR@HEAD_SHA or OWNER/REPO@COMMIT: the bundle's signed subject must be this; "
        "with @HEAD_SHA every candidate's measured commit must be that head.",
    ),
]
PlanOpt = Annotated[
    Path | None,
    typer.Option(
        "--plan",
        help="The plan file of the PR's tree: fail unless the bundle ran that plan (its pinned digest and plan.yaml).",
    ),
]
EmitOpt = Annotated[
    Path | None,
    typer.Option(
        "--emit-attestations",
        help="Write the bundle's in-toto test-result statements (as verify rebuilt them) and verify's own "
        "Simple Verification Result into this folder.",
    ),
]


bundle_app = typer.Typer(help="Seal a run directory into a signed bundle.", no_args_is_help=True)
keys_app = typer.Typer(help="Manage the allowed signers verify trusts.", no_args_is_help=True)


@command(bundle_app, "join")
def bundle_join_cmd(
    parts: list[Path] = typer.Argument(
        ..., help="The parts of a multi-part bundle (X.part0.tar.gz ... X.partN.tar.gz), or part 0 alone."
    ),
    out: Path = typer.Option(..., "-o", "--out", help="Where to write the joined bundle archive."),
    allowed_signers: AllowedSignersOpt = None,
) -> None:
    """Check a multi-part bundle's signed part manifest and every part, then write the one archive they make."""
    from byog.bundles.parts import join_parts
    from byog.bundles.sign import default_allowed_signers
    from byog.bundles.unpack import Limits

    signer, count = join_parts(
        parts,
        allowed_signers or default_allowed_signers(),
        max_archive_bytes=Limits().max_bundle_bytes,
        out=out,
    )
    say(console, f"{out}: {count} parts joined, as the part manifest signed by {signer.principal} names")


@command(bundle_app, "pack")
def bundle_pack_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory with summary.json."),
    out: OutOpt = None,
    no_sign: bool = typer.Option(False, "--no-sign", help="Pack without signing even when a key is configured."),
    subject_for: ForOpt = None,
    claims: Annotated[
        Path | None,
        typer.Option(
            "--claims",
            help="Claims YAML (docs/reference/claims.md) merged into the run's claims.yaml and signed; "
            "each claim must name a measured point.",
        ),
    ] = None,
) -> None:
    """Write the manifest, sign it with your SSH key, and pack a deterministic bundle.tar.gz (at most 25 MB)."""
    from byog.bundles.finalize import describe, seal_and_pack

    packed = seal_and_pack(RunDir(run_dir), out, sign=not no_sign, subject=subject_for, claims=claims)
    say(console, describe(packed))


def verify_cmd(
    bundle: list[Path] = typer.Argument(
        ...,
        help="bundle.tar.gz to check; a multi-part bundle: its parts X.part0.tar.gz ... X.partN.tar.gz, "
        "or part 0 alone (the others are found beside it).",
    ),
    allowed_signers: AllowedSignersOpt = None,
    policy: PolicyOpt = None,
    claims: ClaimsOpt = None,
    allow_unsigned: AllowUnsignedOpt = False,
    subject_for: VerifyForOpt = None,
    plan: PlanOpt = None,
    emit_attestations: EmitOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check a bundle: safe extraction, hashes, signer; then, for a trusted signer only: bounds, schemas, every number
    recomputed, policy, claims."""
    from byog.bundles.verify import verify_bundle_set

    report = verify_bundle_set(
        bundle,
        allowed_signers=allowed_signers,
        policy=policy,
        claims=claims,
        allow_unsigned=allow_unsigned,
        subject_for=subject_for,
        plan=plan,
    )
    refusal = None
    if emit_attestations is not None:
        from byog.bundles.attestations import emit, emit_refusal

        refusal = emit_refusal({r.name: r.status for r in report.results})
        found = next((r for r in report.results if r.name == "attestations" and r.status == "pass"), None)
        passed = [r.name for r in report.results if r.status == "pass"]
        lines = (found.details or {}).get("statements", []) if found is not None else []
        # the bundle verify named: the one file, or part 0 (the signed part manifest) of a multi-part set
        if refusal is None:
            emit(emit_attestations, lines, passed, report.verified, sha256_file(Path(report.bundle)))
    if as_json:
        typer.echo(json.dumps(report.as_json(), indent=2, sort_keys=True, allow_nan=False))
    else:
        print_checks(report)
    if refusal is not None:
        raise CheckFailed(refusal)
    if not report.verified:
        raise typer.Exit(1)


def print_checks(report: VerifyReport) -> None:
    """The setup and warning lines (where the summary recomputed), then one line per check, through the
    console layer's ``say`` (escaped, never markup), and under a check
    that failed more than once each failure on its own line (none hidden behind "and N more"); on a
    terminal each line is cut to its width, so nothing wraps into what could pass for another check's line."""
    from byog.bundles.checks.base import failure_list

    marks = {"pass": ("ok  ", "green"), "skip": ("skip", "dim"), "fail": ("FAIL", "bold red")}
    for line in report.first_screen:  # setup and warnings first: what the verdict below rests on
        say(
            console,
            (line.split(": ", 1)[0], "yellow" if line.startswith("warning") else "bold"),
            ": ",
            terminal_text(line.split(": ", 1)[-1], 600),
            fit=True,
        )
    for result in report.results:
        mark, style = marks[result.status]
        say(console, (mark, style), " ", f"{result.name}: {terminal_text(result.message, 400)}", fit=True)
        for failure in failure_list(result):
            say(console, "- ", terminal_text(failure, 400), fit=True, indent=7)
    style = "bold green" if report.verified else "bold red"
    say(console, terminal_text(report.bundle, 200), ": ", (report.verdict(), style), fit=True)


def report_cmd(
    target: Path = typer.Argument(..., help="A run directory or a bundle.tar.gz."),
    out: Path | None = typer.Option(
        None, "-o", "--out", help="Folder for report.md and plots/ (default: the run directory, or <bundle>-report/)."
    ),
    claims: Path | None = typer.Option(
        None, "--claims", help="Claims YAML to judge in the headline, beside the bundle's own claims.yaml."
    ),
    reproduction: list[Path] = typer.Option(
        [],
        "--reproduction",
        help="A reproduction bundle of this bundle to show (repeatable; <bundle>.reproduction*.tar.gz beside a bundle "
        "are found anyway).",
    ),
    image_base: str = typer.Option(
        PLOTS_BASE,
        "--image-base",
        help="Prefix of the plot links, e.g. where a PR workflow published them; 'none' names the plots instead of "
        "embedding them.",
    ),
    allowed_signers: AllowedSignersOpt = None,
    allow_unsigned: AllowUnsignedOpt = False,
) -> None:
    """Write report.md and the plots (tok/s vs batch, speedup with CI, TPOT distribution, eval deltas); a bundle is
    verified first."""
    from byog.bundles.publish import write_report

    written = write_report(
        target,
        out,
        claims=claims,
        reproductions=reproduction,
        image_base=None if image_base == "none" else image_base,
        allowed_signers=allowed_signers,
        allow_unsigned=allow_unsigned,
    )
    for line in written.not_shown:
        say(console, terminal_text(line, 300), style="yellow")
    shown = f", {written.reproductions} reproduction(s) shown" if written.reproductions else ""
    say(
        console,
        f"wrote {written.report_md} and {len(written.plots)} plots under {written.report_md.parent / 'plots'}{shown}",
    )


@command(keys_app, "add")
def keys_add_cmd(
    github_user: str = typer.Argument(..., help="GitHub user whose SSH signing keys to trust."),
    allowed_signers: Path | None = typer.Option(
        None, "--allowed-signers", help="File to add to (default: ~/.config/byog/allowed_signers)."
    ),
) -> None:
    """Fetch a GitHub user's public SSH signing keys into an allowed_signers file."""
    from byog.bundles.keys import add_github_user
    from byog.bundles.sign import default_allowed_signers

    added = add_github_user(github_user, allowed_signers or default_allowed_signers())
    console.print(
        f"{added.path}: {added.added} key(s) added for {added.principal}, {added.already_present} already there",
        highlight=False,
    )


def attach_cmd(
    bundle: Path = typer.Argument(..., help="bundle.tar.gz"),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    repo: str | None = typer.Option(None, "--repo", help="OWNER/NAME (default: gh's current repository)."),
    allowed_signers: AllowedSignersOpt = None,
    policy: PolicyOpt = None,
    claims: ClaimsOpt = None,
    allow_unsigned: AllowUnsignedOpt = False,
) -> None:
    """Verify the bundle for OWNER/REPO#PR, then post its re-rendered report (every bundle field escaped) to the PR
    with gh."""
    from byog.bundles.publish import attach

    message = attach(
        bundle, pr, repo, allowed_signers=allowed_signers, policy=policy, claims=claims, allow_unsigned=allow_unsigned
    )
    say(console, message)
