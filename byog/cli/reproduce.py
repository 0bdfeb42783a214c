"""`byog reproduce BUNDLE`: re-run a sample of a bundle's points and eval items here; sign the comparison."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.text import Text

from byog.analysis.reproduction import DEFAULT_RUN_NOISE
from byog.bundles.finalize import describe
from byog.cli.common import AllowedSignersOpt, DataDirOpt, JsonOpt, console, err_console, print_json
from byog.core.console_tables import TextTable, print_table
from byog.pipeline.reproduce import DEFAULT_EVAL_ITEMS, DEFAULT_SAMPLE, Reproduced, ReproduceOptions, reproduce
from byog.plans.subset import Overrides
from byog.schemas.reproduction import ReproductionRecord

STYLE = {"reproduced": "bold green", "not reproduced": "bold red", "not compared": "yellow"}  # the outcome line


def reproduce_cmd(
    bundle: Path = typer.Argument(..., help="bundle.tar.gz to reproduce (it must verify first)."),
    points: str | None = typer.Option(
        None,
        "--points",
        help="Point ids to re-run, comma-separated (default: --sample of them, drawn by the bundle's hash).",
    ),
    sample: int = typer.Option(
        DEFAULT_SAMPLE, "--sample", min=0, help="How many points to draw when --points is not given."
    ),
    server: list[str] = typer.Option(
        [], "--server", help="Re-run only this server (repeatable; default: every server that ran the points)."
    ),
    eval_items: int = typer.Option(
        DEFAULT_EVAL_ITEMS, "--eval-items", min=0, help="Items of each eval task to re-run greedily (0: none)."
    ),
    image: list[str] = typer.Option(
        [], "--image", help="[SERVER=]IMAGE to run instead of the bundle's (repeatable; a local server becomes docker)."
    ),
    model_path: str | None = typer.Option(
        None, "--model-path", help="Serve the model from this path or hub id instead of the plan's."
    ),
    server_arg: list[str] = typer.Option(
        [],
        "--server-arg",
        help="[SERVER=]ARG appended to `vllm serve` (repeatable), e.g. --server-arg=--max-model-len=2048.",
    ),
    endpoint: list[str] = typer.Option(
        [], "--endpoint", help="SERVER=URL: measure an already-running server for SERVER (repeatable)."
    ),
    run_noise: float = typer.Option(
        DEFAULT_RUN_NOISE,
        "--run-noise",
        min=0.0,
        help="Between-run noise allowed per value, relative (docs/reproduce.md).",
    ),
    run_dir: Path | None = typer.Option(
        None, "--run-dir", help="Reproduction run directory; an existing one resumes (default: runs/reproduce-<id>/)."
    ),
    out: Path | None = typer.Option(
        None, "-o", "--out", help="Reproduction bundle (default: <bundle>.reproduction.tar.gz beside the bundle)."
    ),
    allowed_signers: AllowedSignersOpt = None,
    allow_unsigned: bool = typer.Option(False, "--allow-unsigned", help="Reproduce an unsigned bundle."),
    no_sign: bool = typer.Option(False, "--no-sign", help="Pack the reproduction without signing it."),
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-run a sample of a bundle's points and eval items on this machine, compare them with the bundle's
    own CIs, and write a signed reproduction bundle beside it. Exit 0 when everything compared was reproduced."""
    opts = ReproduceOptions(
        points=[p.strip() for p in (points or "").split(",") if p.strip()],
        sample=sample,
        servers=server,
        eval_items=eval_items,
        run_noise=run_noise,
        run_dir=run_dir,
        out=out,
        allowed_signers=allowed_signers,
        allow_unsigned=allow_unsigned,
        data_dir=data_dir,
        sign=not no_sign,
        overrides=Overrides(images=image, model_path=model_path, server_args=server_arg, endpoints=endpoint),
    )
    done = reproduce(bundle, opts, err_console if as_json else console)
    if as_json:
        print_json(
            {
                "run_dir": str(done.run_dir),
                "bundle": str(done.packed.bundle),
                "record": done.record.model_dump(mode="json"),
            }
        )
    else:
        render(done)
    if done.record.outcome != "reproduced":
        raise typer.Exit(1)


def _pct(log_value: float | None, signed: bool) -> str:
    if log_value is None:
        return "—"
    pct = (math.exp(log_value) - 1) * 100
    return f"{pct:+.1f}%" if signed else f"±{pct:.1f}%"


def render(done: Reproduced) -> None:
    record: ReproductionRecord = done.record
    table = TextTable(
        f"reproduction of {record.original.plan_name} ({record.original.bundle_sha256[:12]})",
        ["point", "server", "metric", "original", "reproduced", "deviation", "tolerance", "outcome"],
        right={"original", "reproduced", "deviation", "tolerance"},
    )
    for point in record.points:
        for c in point.checks:
            who = f"{c.server}/{c.baseline}" if c.kind == "ratio" else c.server
            metric = c.metric + (" ratio" if c.kind == "ratio" else "")
            table.add_row(
                c.point_id,
                who,
                metric,
                f"{c.original:.4g}" if c.original is not None else "—",
                f"{c.reproduced:.4g}" if c.reproduced is not None else "—",
                _pct(c.deviation, True),
                _pct(c.tolerance, False),
                c.outcome + (f" ({c.note})" if c.note else ""),
            )
    print_table(console, table)
    for e in record.evals:
        console.print(
            Text.assemble(
                f"eval {e.task} on {e.server}: {e.agreed}/{e.items} extracted answers agree "
                f"(need {e.min_agreement:.0%}): ",
                (e.outcome, STYLE[e.outcome]),
            ),
            highlight=False,
        )
    console.print(
        Text(
            f"hardware: {record.hardware.reproduced}"
            + ("" if record.hardware.same else f" (the original ran on {record.hardware.original}: ratios only)")
        )
    )
    console.print(Text.assemble("outcome: ", (record.outcome, STYLE[record.outcome])))
    console.print(Text(describe(done.packed)), soft_wrap=True)
