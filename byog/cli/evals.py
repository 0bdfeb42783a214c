"""`byog eval` (accuracy tasks against a running server) and `byog data pull`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from byog.cli.common import (
    DataDirOpt,
    EndpointOpt,
    JsonOpt,
    ModelOpt,
    RunDirOpt,
    command,
    console,
    print_json,
    reporter,
)
from byog.cli.console_reporter import print_table
from byog.core.reporter import Table

data_app = typer.Typer(help="Datasets for the evals: cache hub copies for offline runs.", no_args_is_help=True)


def eval_cmd(
    endpoint: EndpointOpt,
    tasks: str = typer.Option(
        "gsm8k", "--tasks", help="Comma-separated: gsm8k, gsm8k_cot_chat, aime25, gpqa_diamond, mrcr, mrcr_generated."
    ),
    model: ModelOpt = None,
    tokenizer: str | None = typer.Option(
        None, "--tokenizer", help="Tokenizer path or id, recorded and used by lm-eval's completions client."
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="First N items of each task (default: all)."),
    passes: int = typer.Option(1, "--passes", min=1, help="K passes; pass k sends seed s_k with every request."),
    seeds: str | None = typer.Option(None, "--seeds", help="Comma-separated seeds s_1..s_K (default 1234, 1235, ...)."),
    max_gen_toks: int | None = typer.Option(
        None,
        "--max-gen-toks",
        min=1,
        help="Cap on generated tokens per answer (default: the task's); with the task's prompt reserve it "
        "must fit the server's max_model_len, else the task is refused.",
    ),
    num_concurrent: int | None = typer.Option(
        None, "--num-concurrent", min=1, help="Requests in flight (default: what the server's KV cache holds)."
    ),
    server_name: str = typer.Option("endpoint", "--server-name", help="Name of this server in the run directory."),
    data_dir: DataDirOpt = None,
    run_dir: RunDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run accuracy tasks against a running server and write per-item records and results to a run directory."""
    from byog.pipeline.eval_endpoint import EvalFlags, eval_endpoint

    flags = EvalFlags(
        endpoint=endpoint,
        tasks=tasks,
        model=model,
        tokenizer=tokenizer,
        limit=limit,
        passes=passes,
        seeds=seeds,
        data_dir=data_dir,
        server_name=server_name,
        max_gen_toks=max_gen_toks,
        num_concurrent=num_concurrent,
    )
    result = eval_endpoint(flags, run_dir, reporter(as_json))
    if as_json:
        print_json(result)
    else:
        render_evals(result)


@command(data_app, "pull")
def data_pull_cmd(
    tasks: str = typer.Option(
        "gpqa_diamond,mrcr", "--tasks", help="Tasks whose hub datasets to cache (pinned revisions)."
    ),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Where to keep them (default: BYOG_DATA_DIR, then ~/.cache/byog/datasets)."
    ),
    as_json: JsonOpt = False,
) -> None:
    """Download the tasks' hub datasets at their pinned revisions for later offline runs (gated ones use HF_TOKEN)."""
    from byog.pipeline.eval_endpoint import data_pull

    pulled = data_pull(tasks, data_dir)
    if as_json:
        print_json(pulled)
    else:
        for entry in pulled:
            console.print(f"{entry['task']}: {entry['dataset_id']}@{entry['revision'] or 'main'} -> {entry['dir']}")


def render_evals(result: dict[str, Any]) -> None:

    table = Table(
        f"byog eval -> {result['run_dir']}  ({result['endpoint']['model']} at {result['endpoint']['base_url']})",
        ["task", "data", "items", "passes", "temp", "score", "± SE", "wall s"],
        right={"items", "passes", "temp", "score", "± SE", "wall s"},
    )
    for r in result["results"]:
        table = table.with_row(
            r["task"],
            r["data"],
            str(r["n_items"]),
            str(r["passes"]),
            f"{r['temperature']:g}",
            f"{r['score']:.1f}",
            "-" if r["stderr"] is None else f"{r['stderr']:.1f}",
            f"{r['wall_s']:.1f}",
        )
    print_table(console, table)
    for r in result["results"]:
        if "token_counter" in r:
            bins = ", ".join(f"{label}: {b['score']:.1f} ({b['items']} items)" for label, b in r["bins"].items())
            console.print(f"{r['task']} bins by {r['token_counter']}: {bins}", highlight=False)
