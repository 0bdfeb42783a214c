"""`byog export`: a run directory's or a verified bundle's tables as CSV, parquet or JSON files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from byog.cli.bundles import AllowUnsignedOpt, VerifyForOpt
from byog.cli.common import AllowedSignersOpt, console
from byog.cli.console_reporter import say

FormatOpt = Annotated[
    str, typer.Option("--format", help="csv (for spreadsheets), parquet (dtypes kept) or json (records).")
]


def export_cmd(
    target: Path = typer.Argument(..., help="A run directory or a bundle.tar.gz (a bundle is verified first)."),
    to: Path = typer.Option(..., "--to", help="Folder to write one file per table into (created if absent)."),
    fmt: FormatOpt = "csv",
    allowed_signers: AllowedSignersOpt = None,
    allow_unsigned: AllowUnsignedOpt = False,
    subject_for: VerifyForOpt = None,
) -> None:
    """Write every table of byog.open (requests, points, comparisons, items, verdicts, servers) as files; columns in
    docs/analysis.md."""
    from byog.bundles.export import write_tables
    from byog.bundles.results import open_results

    results = open_results(
        target, allowed_signers=allowed_signers, allow_unsigned=allow_unsigned, subject_for=subject_for
    )
    written = write_tables(results, to, fmt)  # type: ignore[arg-type]  # write_tables refuses an unknown format
    for path in written:
        rows = len(results.table(path.stem))
        say(console, f"wrote {path} ({rows} rows)")
