"""`byog slurm submit --dry-run`: the batch script, sized to the plan's largest server."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.cli import app
from byog.core.errors import UsageError
from byog.pipeline.slurm_submit import SubmitOptions, batch_script, job_shape
from byog.plans.load import load_plan
from byog.plans.tiers import apply_tier
from byog.schemas.plan import Plan


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
    out = CliRunner().invoke(app, ["plan", "kimi-k3-gb300", "--tier", "smoke", "--details"], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    assert "#SBATCH --nodes=2" in out.output and "#SBATCH --exclusive" in out.output
    for server in ("candidate-tp8", "baseline-tp8"):
        for rank in (0, 1):
            lines = [line for line in out.output.splitlines() if f"--job-name={server}-node{rank}-" in line]
            assert lines, (server, rank)
            assert all(f"--nodelist=$NODE{rank}" in line and "--container-image=" in line for line in lines)


def sbatch_words(line: str) -> list[str]:
    """The words sbatch reads from a ``#SBATCH`` line (its _get_argument, Slurm src/sbatch/opt.c):
    whitespace splits, '"' toggles quoting, a backslash takes the next character, '#' ends the line."""
    words: list[str] = []
    word, quoted, escaped, started = "", False, False, False
    for char in line.removeprefix("#SBATCH"):
        if escaped:
            word, escaped, started = word + char, False, True
        elif char == "\\":
            escaped, started = True, True
        elif char == '"':
            quoted, started = not quoted, True
        elif char == "#":
            break
        elif char.isspace() and not quoted:
            if started:
                words.append(word)
            word, started = "", False
        else:
            word, started = word + char, True
    return [*words, word] if started else words


def _smoke(name: str = "smoke") -> Plan:
    plan, _ = load_plan("smoke")
    return plan.model_copy(update={"name": name})


@pytest.mark.parametrize(
    "name", ["smoke\ntouch /tmp/byog-pwned\n#", "smoke\r", "smoke x", 'smo"ke', "smoke#", "-smoke", "x" * 200]
)
def test_a_plan_name_that_is_not_a_plain_name_is_refused_in_one_sentence(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="^the plan's name '.*' cannot name a Slurm job: use letters") as err:
        batch_script(None, _smoke(name), SubmitOptions(run_dir=tmp_path / "r"))
    assert "\n" not in str(err.value) and str(err.value).count(". ") == 0


def test_slurm_submit_refuses_a_plan_file_whose_name_injects_commands(tmp_path: Path) -> None:
    plan_file = tmp_path / "p.yaml"
    text = load_plan("smoke")[1]
    plan_file.write_text(text.replace("name: smoke", 'name: "smoke\\ntouch /tmp/byog-pwned\\n#"', 1))
    out = CliRunner().invoke(app, ["slurm", "submit", str(plan_file), "--dry-run", "--run-dir", str(tmp_path / "r")])
    assert out.exit_code == 2 and "cannot name a Slurm job" in out.output, out.output
    assert "touch /tmp/byog-pwned\n" not in out.output and "#SBATCH" not in out.output


@pytest.mark.parametrize(
    ("field", "value"),
    [("time", "1:00:00\n#SBATCH --x"), ("partition", "gpu\nrm -rf ~"), ("account", "a\tb"), ("tier", "full\n")],
)
def test_a_value_with_a_control_character_is_refused(tmp_path: Path, field: str, value: str) -> None:
    opts = SubmitOptions(run_dir=tmp_path / "r", **{field: value})
    with pytest.raises(UsageError, match="has a control character"):
        batch_script(None, _smoke(), opts)
    with pytest.raises(UsageError, match="^the #SBATCH option .* has a control character"):
        batch_script(None, _smoke(), SubmitOptions(run_dir=tmp_path / "r", extra=("--mem=1G\nid",)))
    with pytest.raises(UsageError, match="^the run directory .* has a control character"):
        batch_script(None, _smoke(), SubmitOptions(run_dir=tmp_path / "r\nid"))


def test_odd_but_legal_values_stay_one_word_each_and_every_sbatch_line_comes_first(tmp_path: Path) -> None:
    odd = "runs dir $(touch pwned) `id` 'q' \"dq\" #hash \\back é"
    run_dir = tmp_path / odd
    opts = SubmitOptions(
        run_dir=run_dir,
        time="1:00:00",
        partition='gpu "a" #b',
        account="acct x",
        extra=('--comment=a "b" #c \\d', "--mem=1G"),
    )
    plan_file = tmp_path / "plan $(id).yaml"
    plan_file.write_text(load_plan("smoke")[1].replace("name: smoke", "name: smoke-1.2_x+y", 1))
    plan, _ = load_plan(str(plan_file))
    script = batch_script(str(plan_file), plan, opts)
    path = tmp_path / "batch.sh"
    path.write_text(script)
    checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    lines = script.splitlines()
    first_command = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    sbatch_at = [i for i, line in enumerate(lines) if line.startswith("#SBATCH")]
    assert sbatch_at and max(sbatch_at) < first_command  # sbatch stops reading options at the first command
    words = [sbatch_words(lines[i]) for i in sbatch_at]
    assert all(len(w) == 1 for w in words), words
    read = [w[0] for w in words]
    for wanted in (
        "--job-name=byog-smoke-1.2_x+y",
        f"--output={run_dir.resolve() / 'slurm-%j.out'}",
        '--partition=gpu "a" #b',
        "--account=acct x",
        '--comment=a "b" #c \\d',
        "--mem=1G",
    ):
        assert wanted in read, (wanted, read)
    command = shlex.split(lines[-1].removeprefix("exec "))
    assert command[:5] == [sys.executable, "-m", "byog", "run", str(plan_file.resolve())]
    assert command[5:] == ["--tier", "full", "--run-dir", str(run_dir.resolve())]
