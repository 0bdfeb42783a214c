"""`byog slurm submit`: run a plan as a Slurm batch job (byog.pipeline.slurm_submit)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from byog.cli.common import PlanArg, TierOpt, command, console, run_dir_option

slurm_app = typer.Typer(help="Run plans under Slurm (sbatch; multi-node servers as srun steps).", no_args_is_help=True)


@command(slurm_app, "submit")
def submit_cmd(
    plan: PlanArg = None,
    tier: TierOpt = "full",
    run_dir: Annotated[
        Path | None,
        run_dir_option("Run directory, on a file system every node sees (default: a new one under runs/)."),
    ] = None,
    time: str | None = typer.Option(None, "--time", help="The job's time limit (sbatch --time), e.g. 4:00:00."),
    partition: str | None = typer.Option(None, "--partition", help="Slurm partition (sbatch --partition)."),
    account: str | None = typer.Option(None, "--account", help="Slurm account (sbatch --account)."),
    gpus_per_node: int | None = typer.Option(
        None, "--gpus-per-node", help="GPUs per node (default: what the plan's largest server uses on one node)."
    ),
    sbatch_arg: list[str] = typer.Option([], "--sbatch-arg", help="A further #SBATCH option, verbatim (repeatable)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the batch script; submit nothing."),
) -> None:
    """Write the batch script that runs the plan (`byog run` inside the job, resumable), print it, sbatch it."""
    from byog.pipeline.slurm_submit import SubmitOptions, default_run_dir, prepare_submission, submit

    opts = SubmitOptions(
        run_dir=(run_dir or default_run_dir()).resolve(),
        tier=tier,
        time=time,
        partition=partition,
        account=account,
        gpus_per_node=gpus_per_node,
        extra=tuple(sbatch_arg),
    )
    if dry_run:
        _, script = prepare_submission(plan, opts)
        console.print(script, highlight=False, markup=False, soft_wrap=True, end="")
        return
    job_id, path = submit(plan, opts)
    console.print(path.read_text(encoding="utf-8"), highlight=False, markup=False, soft_wrap=True, end="")
    console.print(f"submitted Slurm job {job_id}: {path} (run directory {opts.run_dir})", highlight=False)
