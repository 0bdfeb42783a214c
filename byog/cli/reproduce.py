"""`byog reproduce BUNDLE`: re-run a sample of a bundle's points and eval items here; sign the comparison."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from byog.analysis.reproduction_defaults import DEFAULT_EVAL_ITEMS, DEFAULT_RUN_NOISE, DEFAULT_SAMPLE
from byog.cli.common import (
    AllowedSignersOpt,
    DataDirOpt,
    JsonOpt,
    console,
    print_json,
    reporter,
    run_dir_option,
    server_option,
)
from byog.cli.console_reporter import print_table, say
from byog.core.errors import UsageError
from byog.core.reporter import Table

if TYPE_CHECKING:
    from byog.pipeline.reproduce import Planned, Reproduced
    from byog.schemas.plan import EvalSpec, Plan
    from byog.schemas.server import PreparedModel

STYLE = {"reproduced": "bold green", "not reproduced": "bold red", "not compared": "yellow"}  # the outcome line


# reproduce's own options (the shared ones are byog.cli.common's)
BundleArg = Annotated[Path, typer.Argument(help="bundle.tar.gz to reproduce (it must verify first).")]
PointsOpt = Annotated[
    str | None,
    typer.Option(
        "--points", help="Point ids to re-run, comma-separated (default: --sample of them, drawn by the bundle's hash)."
    ),
]
SampleOpt = Annotated[int, typer.Option("--sample", min=0, help="How many points to draw when --points is not given.")]
ServersOpt = Annotated[
    list[str] | None,
    server_option("Re-run only this server (repeatable; default: every server that ran the points)."),
]
EvalItemsOpt = Annotated[
    int, typer.Option("--eval-items", min=0, help="Items of each eval task to re-run greedily (0: none).")
]
ImageOpt = Annotated[
    list[str],
    typer.Option(
        "--image", help="[SERVER=]IMAGE: run in docker with this image (repeatable; default: the local runtime)."
    ),
]
ModelPathOpt = Annotated[
    str | None,
    typer.Option(
        "--model-path",
        help="The model to serve: a path or hub id (needed unless the bundle serves byog's built-in model).",
    ),
]
HostOpt = Annotated[
    list[str],
    typer.Option(
        "--host", help="[SERVER=]HOST per node, rank 0 first: run that multi-node server over ssh (repeatable)."
    ),
]
SshOptionOpt = Annotated[list[str], typer.Option("--ssh-option", help="An extra `ssh` option for --host (repeatable).")]
PythonOpt = Annotated[
    list[str],
    typer.Option(
        "--python",
        "--node-python",
        help="[SERVER=]PYTHON: your interpreter or venv for a server's vLLM, on every node (default: byog's); "
        "a bundle's own is never run (repeatable).",
    ),
]
EnvOpt = Annotated[list[str], typer.Option("--env", help="[SERVER=]KEY=VALUE in a server's environment (repeatable).")]
AllowFlagOpt = Annotated[
    list[str],
    typer.Option(
        "--allow-flag",
        help="A vllm serve flag (or additional_config.KEY, speculative_config.KEY) the bundle may pass though it is "
        "not on byog's list, e.g. --allow-flag=--trust-remote-code (repeatable).",
    ),
]
ReproducePolicyOpt = Annotated[
    Path | None,
    typer.Option("--policy", help="Your policy YAML: the bundle must meet it, and its allowed_image_digests may run."),
]
DryRunOpt = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Verify the bundle and print exactly what would run (servers, argv, env, points); run nothing.",
    ),
]
ServerArgOpt = Annotated[
    list[str],
    typer.Option(
        "--server-arg",
        help="[SERVER=]ARG appended to `vllm serve` (repeatable), e.g. --server-arg=--max-model-len=2048.",
    ),
]
ReproduceEndpointOpt = Annotated[
    list[str], typer.Option("--endpoint", help="SERVER=URL: measure an already-running server for SERVER (repeatable).")
]
RunNoiseOpt = Annotated[
    float,
    typer.Option("--run-noise", min=0.0, help="Between-run noise allowed per value, relative (docs/reproduce.md)."),
]
ReproduceRunDirOpt = Annotated[
    Path | None,
    run_dir_option("Reproduction run directory; an existing one resumes (default: runs/reproduce-<id>/)."),
]
ReproduceOutOpt = Annotated[
    Path | None,
    typer.Option("-o", "--out", help="Reproduction bundle (default: <bundle>.reproduction.tar.gz beside the bundle)."),
]
AllowUnsignedOpt = Annotated[bool, typer.Option("--allow-unsigned", help="Reproduce an unsigned bundle.")]
NoSignOpt = Annotated[bool, typer.Option("--no-sign", help="Pack the reproduction without signing it.")]


def reproduce_cmd(
    bundle: BundleArg,
    points: PointsOpt = None,
    sample: SampleOpt = DEFAULT_SAMPLE,
    server: ServersOpt = None,
    eval_items: EvalItemsOpt = DEFAULT_EVAL_ITEMS,
    image: ImageOpt = [],  # noqa: B006  (typer copies a list default; it is never mutated)
    model_path: ModelPathOpt = None,
    host: HostOpt = [],  # noqa: B006
    ssh_option: SshOptionOpt = [],  # noqa: B006
    python: PythonOpt = [],  # noqa: B006
    env: EnvOpt = [],  # noqa: B006
    allow_flag: AllowFlagOpt = [],  # noqa: B006
    policy: ReproducePolicyOpt = None,
    dry_run: DryRunOpt = False,
    server_arg: ServerArgOpt = [],  # noqa: B006
    endpoint: ReproduceEndpointOpt = [],  # noqa: B006
    run_noise: RunNoiseOpt = DEFAULT_RUN_NOISE,
    run_dir: ReproduceRunDirOpt = None,
    out: ReproduceOutOpt = None,
    allowed_signers: AllowedSignersOpt = None,
    allow_unsigned: AllowUnsignedOpt = False,
    no_sign: NoSignOpt = False,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-run a sample of a bundle's points and eval items on this machine, compare them with the bundle's
    own CIs, and write a signed reproduction bundle beside it. Exit 0 when everything compared was reproduced."""
    from byog.pipeline.reproduce import ReproduceOptions, plan_reproduction, reproduce
    from byog.plans.subset import Overrides

    opts = ReproduceOptions(
        points=[p.strip() for p in (points or "").split(",") if p.strip()],
        sample=sample,
        servers=server or [],
        eval_items=eval_items,
        run_noise=run_noise,
        run_dir=run_dir,
        out=out,
        allowed_signers=allowed_signers,
        policy=policy,
        allow_unsigned=allow_unsigned,
        data_dir=data_dir,
        sign=not no_sign,
        overrides=Overrides.from_config(
            images=image,
            model_path=model_path,
            server_args=server_arg,
            endpoints=endpoint,
            hosts=host,
            ssh_options=ssh_option,
            pythons=python,
            env=env,
            allow_flags=allow_flag,
        ),
    )
    if dry_run:
        planned = plan_reproduction(bundle, opts)
        if as_json:
            print_json(dry_run_json(planned))
        else:
            render_dry_run(planned)
        return
    done = reproduce(bundle, opts, reporter(as_json))
    if as_json:
        print_json(done_json(done))
    else:
        render(done)
    if done.record.outcome != "reproduced":
        raise typer.Exit(1)


def done_json(done: Reproduced) -> dict[str, object]:
    """``reproduce --json``'s answer: where the run and its bundle are, and the signed record."""
    return {
        "run_dir": str(done.run_dir),
        "bundle": str(done.packed.bundle),
        "record": done.record.model_dump(mode="json"),
    }


def _pct(log_value: float | None, signed: bool) -> str:
    if log_value is None:
        return "—"
    pct = (math.exp(log_value) - 1) * 100
    return f"{pct:+.1f}%" if signed else f"±{pct:.1f}%"


def render(done: Reproduced) -> None:
    from byog.bundles.finalize import describe
    from byog.schemas.reproduction import ReproductionRecord

    record: ReproductionRecord = done.record
    table = Table(
        f"reproduction of {record.original.plan_name} ({record.original.bundle_sha256[:12]})",
        ["point", "server", "metric", "original", "reproduced", "deviation", "tolerance", "outcome"],
        right={"original", "reproduced", "deviation", "tolerance"},
    )
    for point in record.points:
        for c in point.checks:
            who = f"{c.server}/{c.baseline}" if c.kind == "ratio" else c.server
            metric = c.metric + (" ratio" if c.kind == "ratio" else "")
            table = table.with_row(
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
        say(
            console,
            f"eval {e.task} on {e.server}: {e.agreed}/{e.items} extracted answers agree (need {e.min_agreement:.0%}): ",
            (e.outcome, STYLE[e.outcome]),
        )
    for n in record.numerics:
        say(
            console,
            f"numerics {n.candidate} vs {n.baseline}: {n.original or '–'} -> {n.reproduced}: ",
            (n.outcome, STYLE[n.outcome]),
            f" ({n.note})" if n.note else "",
        )
    original = "" if record.hardware.same else f" (the original ran on {record.hardware.original}: ratios only)"
    say(console, f"hardware: {record.hardware.reproduced}{original}")
    say(console, "outcome: ", (record.outcome, STYLE[record.outcome]))
    say(console, describe(done.packed))


def _launch(planned: Planned, name: str) -> dict[str, Any]:
    from byog.pipeline.runtimes import runtime_for
    from byog.plans.numerics_roles import launch_config
    from byog.runtimes.local import cpu_vllm_installed
    from byog.schemas.plan import ServerBase

    config = launch_config(planned.plan, name)
    model = _model(planned)
    cpu_build = config.runs_this_hosts_vllm and cpu_vllm_installed()
    launch = runtime_for(config).planned(name, config, model, cpu_build=cpu_build)
    # where and how it runs, as far as it differs from its runtime's defaults (the argv shows vLLM's settings)
    where = config.model_dump(mode="json", exclude_defaults=True, exclude={*ServerBase.model_fields, "env", "runtime"})
    return {
        "server": name,
        "runtime": config.runtime,
        "where": where,
        "argv": launch.argv,
        "command": launch.command,
        "env": launch.env,
    }


def _model(planned: Planned) -> PreparedModel:
    """The model as the run would name it; one not on this machine yet is named as a placeholder
    (``model_needed`` says what the run needs), so a dry run previews before any download."""
    from byog.images.models import model_as_named
    from byog.schemas.server import PreparedModel

    spec = planned.plan.model
    try:
        return model_as_named(spec)
    except UsageError:
        return PreparedModel(path=f"<{spec.path}>", served_name=spec.served_name or spec.path, tokenizer=spec.path)


def model_needed(planned: Planned) -> str | None:
    """What the run needs that this machine lacks: the model's folder, or None when it is there."""
    from byog.images.models import model_as_named

    spec = planned.plan.model
    try:
        model_as_named(spec)
    except UsageError:
        return (
            f"the model {spec.path} is not on this machine (no config.json there): the run needs its folder "
            "(config.json, tokenizer and weights), named with --model-path"
        )
    return None


def _eval_request(plan: Plan, spec: EvalSpec) -> dict[str, Any]:
    """What each request of an eval sends besides its prompt: the task's generation settings, the plan's over them."""
    from byog.plans.tasks import get_task

    task = get_task(spec.task)
    return {
        "task": spec.task,
        "items": spec.limit,
        "servers": plan.servers_for(spec),
        "api": task.api,
        "gen_kwargs": dict(spec.gen_kwargs),
        "generation": {**task.generation, **spec.gen_kwargs},
        "seeds": plan.seeds[: spec.passes],
    }


def dry_run_json(planned: Planned) -> dict[str, Any]:
    """Everything a reproduction would start and send, in launch order, and what of the bundle it leaves out."""
    from byog.pipeline.numerics import references
    from byog.pipeline.reproduce import dropped_shown
    from byog.plans.expand import expand_plan

    plan = planned.plan
    points = [p for p in expand_plan(plan) if p.point_id in planned.points]
    numerics = None
    if plan.numerics is not None:
        numerics = {"servers": [s for s in planned.servers if s in references(plan)], **plan.numerics.model_dump()}
    return {
        "model": plan.model.path,
        "servers": [_launch(planned, name) for name in planned.servers],
        "points": [
            {
                "point_id": p.point_id,
                "servers": list(p.servers),
                **p.model_dump(include={"isl", "osl", "waves"}),
                **_point_request(plan, p.workload),
            }
            for p in points
        ],
        "evals": [_eval_request(plan, e) for e in plan.evals],
        "numerics": numerics,
        "seed": plan.seeds[0],
        "dropped": dropped_shown(planned),
        "why": planned.why,
        "left_out": planned.left_out,
        "warnings": planned.warnings,
        "model_needed": model_needed(planned),
    }


def _point_request(plan: Plan, workload: str) -> dict[str, Any]:
    """How a point's requests are made: the workload's API, request body style and prompts."""
    from byog.schemas.plan import AgenticWorkload

    spec = next(w for w in plan.workloads if (w.name or w.kind) == workload)
    if isinstance(spec, AgenticWorkload):
        return {}
    return {"api": spec.api, "request_body": spec.request_body, "prompts": spec.prompts.model_dump(mode="json")}


def _line(text: str, indent: int = 0) -> None:
    say(console, text, indent=indent)


def render_dry_run(planned: Planned) -> None:
    from byog.pipeline.reproduce import DROPPED_HEADER, dropped_lines

    shown = dry_run_json(planned)
    _line(f"byog reproduce --dry-run: model {shown['model']}; the servers, in launch order:")
    for launch in shown["servers"]:
        where = [f"runtime {launch['runtime']}"]
        where += [
            f"{key.replace('_', ' ')} {shlex.join(map(str, v)) if isinstance(v, list) else shlex.quote(str(v))}"
            for key, v in launch["where"].items()
        ]
        _line(f"{launch['server']}: {', '.join(where)}", 2)
        if launch["argv"] is None:  # nothing starts here, or per node
            _line(launch["command"], 4)
            continue
        _line(f"argv: {shlex.join(launch['argv'])}", 4)
        _line(f"env: {json.dumps(launch['env'], sort_keys=True)}", 4)
    for point in shown["points"]:
        _line(f"point {point['point_id']} (ISL {point['isl']}, OSL {point['osl']}) on {', '.join(point['servers'])}")
    for spec in shown["evals"]:
        _line(
            f"eval {spec['task']}: {spec['items']} item(s) on {', '.join(spec['servers'])}, "
            f"generation {json.dumps(spec['generation'], sort_keys=True)}"
        )
    if numerics := shown["numerics"]:
        _line(
            f"numerics on {', '.join(numerics['servers'])}: {numerics['random_prompts']} random prompt(s) of "
            f"{numerics['random_isl']} tokens, {numerics['dataset_prompts']} {numerics['dataset']} prompt(s) of "
            f"{numerics['dataset_isl']}, contexts {numerics['contexts']}, {numerics['max_tokens']} tokens each"
        )
    _line(f"why these points: {shown['why']}")
    if shown["left_out"]:
        _line("the bundle's work this reproduction leaves out:")
    for line in shown["left_out"]:
        _line(line, 2)
    if shown["dropped"]:
        _line(DROPPED_HEADER)
    for line in dropped_lines(planned):
        _line(line, 2)
    for warning in [*shown["warnings"], *([shown["model_needed"]] if shown["model_needed"] else [])]:
        say(console, "⚠ " + warning, style="yellow")
    _line(f"seed {shown['seed']}; nothing was started (--dry-run)")
