"""`byog items`: the eval items a candidate and its baseline scored differently, per task."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from byog.cli.bundles import AllowUnsignedOpt
from byog.cli.common import AllowedSignersOpt, JsonOpt, console, print_json
from byog.cli.console_reporter import print_table, say
from byog.core.reporter import Table
from byog.core.safe_text import json_safe, terminal_text

if TYPE_CHECKING:
    from byog.analysis.discordant import DiscordantItems


def items_cmd(
    target: Path = typer.Argument(..., help="A run directory or a bundle.tar.gz (a bundle is verified first)."),
    pair: str | None = typer.Option(None, "--pair", help="The candidate of the pair (default: every pair)."),
    task: str | None = typer.Option(None, "--task", help="The eval task (default: every task)."),
    allowed_signers: AllowedSignersOpt = None,
    allow_unsigned: AllowUnsignedOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Print the items whose score differs between a candidate and its baseline: id, the prompt's start, both
    answers and scores (a gated task: ids, hashes and scores only)."""
    from byog.analysis import discordant
    from byog.bundles.items import load_discordant

    found = load_discordant(
        target, candidate=pair, task=task, allowed_signers=allowed_signers, allow_unsigned=allow_unsigned
    )
    if as_json:
        print_json(json_safe([_as_json(f) for f in found]))
        return
    for flipped in found:
        title = (
            f"{terminal_text(flipped.task, 60)}, {terminal_text(flipped.candidate, 60)} vs "
            f"{terminal_text(flipped.baseline, 60)}: "
            f"{flipped.flipped_line()} (of {flipped.n} paired; scores in points)"
            + ("; gated data: ids, hashes and scores only" if flipped.gated else "")
        )
        if not flipped.items:
            say(console, title)
            continue
        table = Table(
            title,
            discordant.columns(flipped.gated),
            right={c for c in discordant.columns(flipped.gated) if "score" in c},
        )
        for item in flipped.items:
            table = table.with_row(*(terminal_text(cell, 200) for cell in discordant.cells(item, flipped.gated)))
        print_table(console, table)
        raw = _raw_outputs(flipped)
        if raw.rows:
            print_table(console, raw)


def _raw_outputs(flipped: DiscordantItems) -> Table:
    """The raw output items.parquet kept of each [invalid] answer of a flipped item (item schema 2)."""
    table = Table(
        f"raw output of the [invalid] answers above ({terminal_text(flipped.task, 60)}): what the server returned",
        ["item", "server", "pass", "raw output"],
        right={"pass"},
    )
    for item in flipped.items:
        for name, side in ((flipped.candidate, item.candidate), (flipped.baseline, item.baseline)):
            for k, text in enumerate(side.raw_outputs):
                if text is not None:
                    table = table.with_row(
                        terminal_text(item.item_id, 200), terminal_text(name, 60), str(k), terminal_text(text)
                    )
    return table


def _as_json(flipped: DiscordantItems) -> dict[str, object]:
    return {
        "task": flipped.task,
        "candidate": flipped.candidate,
        "baseline": flipped.baseline,
        "gated": flipped.gated,
        "n": flipped.n,
        "lost": flipped.lost,
        "won": flipped.won,
        "items": [dataclasses.asdict(item) for item in flipped.items],
    }
