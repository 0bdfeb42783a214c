"""`byog slurm submit --dry-run`: the batch script, sized to the plan's largest server."""

from __future__ import annotations

import sys
from pathlib import Path

from typer.testing import CliRunner

from byog.cli import app
from byog.pipeline.slurm_submit import SubmitOptions, batch_script, job_shape
from byog.plans.load import load_plan
from byog.plans.tiers import apply_tier


def sbatch_options(script: str) -> list[str]:
    return [line.removeprefix("#SBATCH ") for line in script.splitlines() if line.startswith("#SBATCH ")]


def test_the_flagship_job_is_four_trays_of_four_gpus(tmp_path: Path) -> None:
    plan, _ = load_plan("kimi-k3-gb300")
    assert job_shape(plan) == (4, 4)  # TP16 = 4 nodes x 4 GPUs
    assert job_shape(apply_tier(plan, "smoke")) == (2, 4)  # the smoke tier runs the TP8 servers only
    opts = SubmitOptions(run_dir=tmp_path / "run", tier="full", time="4:00:00", partition="gb300", account="vllm")
    script = batch_script("kimi-k3-gb300", plan, opts)
    assert script.startswith("#!/bin/bash\n")
    options = sbatch_options(script)
    for wanted in (
        "--nodes=4",
        "--ntasks-per-node=1",
        "--exclusive",
        "--gpus-per-node=4",
        "--time=4:00:00",
        "--partition=gb300",
        "--account=vllm",
        "--requeue",
        f"--output={tmp_path / 'run' / 'slurm-%j.out'}",
    ):
        assert wanted in options, (wanted, options)
    # byog run inside the job, on the run directory: a requeued job resumes there.
    assert script.rstrip().splitlines()[-1] == (
        f"exec {sys.executable} -m byog run kimi-k3-gb300 --tier full --run-dir {tmp_path / 'run'}"
    )


def test_a_cpu_plan_asks_for_no_gpus_and_a_plan_file_is_named_by_its_path(tmp_path: Path) -> None:
    plan_file = tmp_path / "p.yaml"
    plan_file.write_text(load_plan("smoke")[1])
    plan, _ = load_plan(str(plan_file))
    script = batch_script(str(plan_file), plan, SubmitOptions(run_dir=tmp_path / "r"))
    options = sbatch_options(script)
    assert "--nodes=1" in options and not any(o.startswith("--gpus-per-node") for o in options)
    assert not any(o.startswith(("--time", "--partition", "--account")) for o in options)  # only when asked
    assert f"byog run {plan_file.resolve()} --tier full" in script


def test_dry_run_prints_the_script_and_submits_nothing(tmp_path: Path) -> None:
    out = CliRunner().invoke(
        app,
        ["slurm", "submit", "deepseek-v4.1-flash", "--dry-run", "--run-dir", str(tmp_path / "r"), "--time", "1:00:00"],
    )
    assert out.exit_code == 0, out.output
    assert "#SBATCH --nodes=2" in out.output and "#SBATCH --gpus-per-node=4" in out.output
    assert "#SBATCH --time=1:00:00" in out.output
    assert not (tmp_path / "r").exists()  # nothing written, nothing submitted


def test_byog_plan_shows_the_batch_script_and_every_nodes_srun_line() -> None:
    out = CliRunner().invoke(app, ["plan", "kimi-k3-gb300", "--tier", "smoke"], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    assert "#SBATCH --nodes=2" in out.output and "#SBATCH --exclusive" in out.output
    for server in ("candidate-tp8", "baseline-tp8"):
        for rank in (0, 1):
            lines = [line for line in out.output.splitlines() if f"--job-name={server}-node{rank}-" in line]
            assert lines, (server, rank)
            assert all(f"--nodelist=$NODE{rank}" in line and "--container-image=" in line for line in lines)
