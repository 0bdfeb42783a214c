"""``byog slurm submit PLAN``: the batch script that runs a plan under Slurm, and its submission.

The job is sized to the plan's largest server: as many nodes as its ``nodes``, as many GPUs per
node as it uses on one, whole nodes (``--exclusive``). The script runs ``byog run`` on the first
node with ``--run-dir`` on a file system every node sees; ``byog run`` resumes a run directory,
so a job Slurm requeues (``--requeue``: a node failure, a preemption) carries on from the points
already measured. Multi-node servers (``runtime: slurm``) start their nodes as srun steps of this
job (byog.runtimes.slurm_nodes).

Every value in the script is checked or quoted where it lands: a value with a control character
(a line break would end a ``#SBATCH`` line and start a command) is refused; ``#SBATCH`` values are
escaped as sbatch reads them (a backslash before a space, quote, ``#`` or backslash); the command
line is ``shlex.join``'s; the plan's name, also the job's name, must be a plain name.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from byog.core.errors import EnvironmentProblem, UsageError
from byog.core.paths import new_run_id
from byog.core.safe_text import one_line
from byog.core.settings import runs_dir
from byog.pipeline.opening import open_run_dir
from byog.plans.load import builtin_profiles, load_plan
from byog.plans.tiers import apply_tier
from byog.runtimes.launchers import world_size
from byog.runtimes.local import cpu_vllm_installed
from byog.schemas.plan import LaunchedConfig, Plan

BATCH_FILE = "slurm-batch.sh"
OUTPUT_NAME = "slurm-%j.out"  # Slurm writes the job's output there (%j: the job id)
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")  # the plan's name as the job's: no space, no quote
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# sbatch's #SBATCH reader: whitespace splits words, '"' toggles quoting, '\' escapes, '#' ends the line
_SBATCH_SPECIAL = re.compile(r'([\\"#\s])')


@dataclass(frozen=True)
class SubmitOptions:
    run_dir: Path
    tier: str = "full"
    time: str | None = None  # --time, e.g. 4:00:00
    partition: str | None = None
    account: str | None = None
    gpus_per_node: int | None = None  # default: the plan's largest server's per node
    extra: tuple[str, ...] = ()  # further #SBATCH options, verbatim


def server_gpus_per_node(config: LaunchedConfig, cpu: bool) -> int:
    if cpu:
        return 0
    if config.multi_node:
        return config.gpus_per_node if config.gpus_per_node is not None else world_size(config) // config.nodes
    chosen = config.gpu_indices() if config.image_ref() else None  # an image's GPU request names its devices
    return len(chosen) if chosen is not None else world_size(config)


def _cpu_plan(plan: Plan) -> bool:
    """The embedded default (CPU vLLM, no image): the job asks for no GPUs."""
    images = [c.image_ref() for c in plan.servers.values()]
    return not any(images) and cpu_vllm_installed()


def job_shape(plan: Plan) -> tuple[int, int]:
    """(nodes, GPUs per node) of the plan's largest server."""
    cpu = _cpu_plan(plan)
    launched = [launched for c in plan.servers.values() if (launched := c.launched()) is not None]
    nodes = max((c.nodes for c in launched), default=1)
    gpus = max((server_gpus_per_node(c, cpu) for c in launched), default=0)
    return nodes, gpus


def plan_argument(plan_ref: str | None) -> str:
    """The plan as the job names it: a built-in profile by name, a file by its absolute path."""
    if plan_ref is None:
        return "smoke"
    if plan_ref in builtin_profiles() and not Path(plan_ref).is_file():
        return plan_ref
    return str(Path(plan_ref).resolve())


def _plain(what: str, value: str) -> str:
    """``value`` unless it has a control character, which no line of the script may carry."""
    if _CONTROL.search(value):
        raise UsageError(
            f"{what} '{one_line(value, 120)}' has a control character (a line break, tab or escape), "
            "which a line of the Slurm batch script cannot carry"
        )
    return value


def _sbatch_word(option: str) -> str:
    """One #SBATCH option as sbatch reads it back: one word, whatever spaces, quotes or '#' it has."""
    return _SBATCH_SPECIAL.sub(r"\\\1", option)


def job_name(plan: Plan) -> str:
    if JOB_NAME.fullmatch(plan.name) is None:
        raise UsageError(
            f"the plan's name '{one_line(plan.name, 120)}' cannot name a Slurm job: use letters, digits "
            "and '_.+-' (up to 128, the first a letter or digit)"
        )
    return f"byog-{plan.name}"


def batch_script(plan_ref: str | None, plan: Plan, opts: SubmitOptions) -> str:
    nodes, gpus = job_shape(plan)
    if opts.gpus_per_node is not None:
        gpus = opts.gpus_per_node
    name = job_name(plan)
    run_dir = Path(_plain("the run directory", str(opts.run_dir.resolve())))
    tier = _plain("the tier", opts.tier)
    sbatch = [
        f"--job-name={name}",
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        "--exclusive",
        *([f"--gpus-per-node={gpus}"] if gpus else []),
        *([f"--time={_plain('--time', opts.time)}"] if opts.time else []),
        *([f"--partition={_plain('the partition', opts.partition)}"] if opts.partition else []),
        *([f"--account={_plain('the account', opts.account)}"] if opts.account else []),
        "--requeue",
        "--open-mode=append",
        f"--output={run_dir / OUTPUT_NAME}",
        f"--chdir={_plain('the working directory', str(Path.cwd()))}",
        *(_plain("the #SBATCH option", option) for option in opts.extra),
    ]
    plan_arg = _plain("the plan", plan_argument(plan_ref))
    run = [
        _plain("the Python", sys.executable),
        "-m",
        "byog",
        "run",
        plan_arg,
        "--tier",
        tier,
        "--run-dir",
        str(run_dir),
    ]
    lines = [
        "#!/bin/bash",
        f"# byog: plan {plan.name} (tier {tier}) under Slurm, written by `byog slurm submit`.",
        f"# The run directory must be on a file system every node sees: {run_dir}",
        "# A requeued job runs the same `byog run`, which resumes from the points already in it.",
        *[f"#SBATCH {_sbatch_word(option)}" for option in sbatch],
        "set -euo pipefail",
        f"exec {shlex.join(run)}",
        "",
    ]
    return "\n".join(lines)


def default_run_dir() -> Path:
    return runs_dir().resolve() / new_run_id()


def _slurm(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise EnvironmentProblem(
            f"'{argv[0]}' is not installed here: `byog slurm submit` needs Slurm's commands"
        ) from None


def check_partition(partition: str) -> None:
    known = _slurm(["sinfo", "--noheader", "--format=%R"])
    if known.returncode != 0:
        raise EnvironmentProblem(f"sinfo failed (is Slurm reachable from here?): {known.stderr.strip()[-300:]}")
    names = sorted(set(known.stdout.split()))
    if partition not in names:
        raise UsageError(f"Slurm has no partition '{partition}' (it has {', '.join(names) or 'none'})")


def prepare_submission(plan_ref: str | None, opts: SubmitOptions) -> tuple[Plan, str]:
    plan, _ = load_plan(plan_ref)
    cut = apply_tier(plan, opts.tier)
    return cut, batch_script(plan_ref, cut, opts)


def submit(plan_ref: str | None, opts: SubmitOptions) -> tuple[str, Path]:
    """Open the run directory (plan.yaml, placeholders checked), write the script there, sbatch it."""
    if opts.partition:
        check_partition(opts.partition)
    _, rd = open_run_dir(plan_ref, opts.run_dir, opts.tier)
    _, script = prepare_submission(plan_ref, opts)
    path = rd.root / BATCH_FILE
    path.write_text(script, encoding="utf-8")
    done = _slurm(["sbatch", "--parsable", str(path)])
    if done.returncode != 0:
        raise EnvironmentProblem(f"sbatch refused the job: {done.stderr.strip()[-400:]}")
    return done.stdout.strip().split(";")[0], path
