"""Everything a plan names, checked before the first server starts: every problem at once.

`byog plan` and `byog run` both call ``preflight``. Each check that can run without a server runs,
and what it finds is collected rather than raised, so a plan with a task typo, a vLLM flag typo
and a model path typo is refused once with all three (``PlanProblems``):

- the plan's own checks (placeholders, the model reference, what fits, the numerics roles,
  interleaving) and the eval task names and trace files it names, with the nearest known name;
- an eval with looks whose limit is above the items its data holds where that data is on this host
  (its looks are fractions of the limit: the run would refuse it only when the evals begin, after the bench);
- each launched server's `vllm serve` arguments, parsed by vLLM's own serve parser in the
  interpreter that will run it (``byog.images.vllm_args_probe``; no model is loaded). A local
  server's interpreter is its ``python`` (a Python with a vLLM byog supports, whose vLLM imports:
  each refused in one sentence), else this one. A docker, ssh or slurm server's vLLM lives in its
  image or on its nodes, which byog reaches only by launching there: those are named as not
  checked, with why (a remote ``python`` is checked on its host as the server starts). An
  endpoint was started by someone else: nothing to parse.

A probe's answer is cached (by interpreter, vLLM install and arguments) under the cache dir, so
a second `byog plan` or a resumed `byog run` of the same servers does not import vLLM again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from byog.bench.traces import SAMPLES
from byog.bundles.claims_in import plan_claim_problems
from byog.core.errors import ByogError, PlanProblems, UsageError
from byog.core.io import atomic_write_json
from byog.core.settings import cache_dir, resolve_data_dir
from byog.evals.data import read_split, resolve_source
from byog.images import vllm_args_probe
from byog.images.models import check_model_reference
from byog.pipeline.interleave_check import check_interleave
from byog.pipeline.kv_overview import check_plan_kv
from byog.plans.expand import check_plan_fits
from byog.plans.load import did_you_mean
from byog.plans.numerics_roles import check_stock_roles, resolve_control
from byog.plans.tasks import TASKS, stops_early
from byog.plans.tiers import find_placeholders, require_no_placeholders
from byog.runtimes.interpreter import checked_vllm, server_python
from byog.runtimes.launch import SECRET_ENV, vllm_serve_args
from byog.schemas.claims import Claim
from byog.schemas.plan import AgenticWorkload, Plan, TraceSource
from byog.schemas.server import PreparedModel

PROBE_TIMEOUT_S = 180.0
PLACEHOLDER_MODEL = "MODEL"  # the model argument the parser sees; the model itself is checked apart


def task_problems(plan: Plan) -> list[str]:
    return [
        f"'evals[{i}].task': unknown eval task '{spec.task}'{did_you_mean(spec.task, set(TASKS))}"
        for i, spec in enumerate(plan.evals)
        if spec.task not in TASKS
    ]


def eval_size_problems(plan: Plan, data_dir: Path | None = None) -> list[str]:
    """Each eval with looks whose limit is above the items of its task's data (read where the run
    reads it: ``data_dir``, else byog's default); data streamed from the hub is counted only as it runs,
    and an offline fixture's rows (stand-ins in the task's schema) say nothing of the task's count."""
    found = []
    for i, spec in enumerate(plan.evals):
        task = TASKS.get(spec.task)
        if task is None or spec.limit is None or not stops_early(spec):
            continue
        try:
            source = resolve_source(task, resolve_data_dir(data_dir))
        except ByogError:
            continue  # where the data comes from is the run's to refuse, with its own reason
        if not source.files or source.kind == "fixture":  # streamed, or stand-in rows: not the task's count
            continue
        items = len(read_split(source, task.eval_split))
        if spec.limit > items:
            found.append(
                f"'evals[{i}].limit': {spec.limit} is above the {items} items of {task.name} ({source.label}), and its "
                f"looks are fractions of the limit: set it to {items} or fewer"
            )
    return found


SECRET_FLAGS = ("--hf-token", "--api-key")  # vLLM flags whose value is a credential


def secret_problems(plan: Plan) -> list[str]:
    """A credential written into the plan: plan.yaml is recorded as written and signed into the bundle."""
    found = []
    for name, config in plan.servers.items():
        flags = {arg.partition("=")[0] for arg in config.args}
        launched = config.launched()
        named = [f"'servers.{name}.args': {flag}" for flag in SECRET_FLAGS if flag in flags]
        named += [f"'servers.{name}.env.{key}'" for key in sorted(set(launched.env if launched else {}) & SECRET_ENV)]
        found += [
            f"{where} puts a credential into the plan, which the bundle records as written: set it in the "
            "environment byog runs in (a local server inherits it) instead"
            for where in named
        ]
    return found


def trace_problems(plan: Plan) -> list[str]:
    found = []
    for i, w in enumerate(plan.workloads):
        if isinstance(w, AgenticWorkload) and isinstance(w.source, TraceSource):
            trace = w.source.trace
            if trace not in SAMPLES and not Path(trace).expanduser().is_file():
                found.append(
                    f"'workloads[{i}].source.trace': '{trace}' is neither a shipped sample "
                    f"({', '.join(SAMPLES)}) nor a file{did_you_mean(trace, set(SAMPLES))}"
                )
    return found


def _collected(checks: list[Callable[[], object]]) -> list[str]:
    found = []
    for check in checks:
        try:
            check()
        except UsageError as err:
            found.append(str(err))
    return found


# --- each server's vLLM arguments, by its own parser ----------------------------------------


def _probe(python: str, request: dict[str, Any], *extra: str) -> dict[str, Any]:
    """Run the probe in ``python``; its answer, or ``{"error": why}``."""
    source = Path(vllm_args_probe.__file__).read_text(encoding="utf-8")
    try:
        done = subprocess.run(
            [python, "-c", source, json.dumps(request), *extra],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            cwd="/",
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return {"error": f"{python} could not run it ({type(err).__name__}: {err})"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(vllm_args_probe.MARKER):
            answer: dict[str, Any] = json.loads(line.removeprefix(vllm_args_probe.MARKER))
            return answer
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"{python} exited {done.returncode}: {last}"}


def serve_args_for_check(plan: Plan, name: str) -> list[str]:
    """What follows `vllm serve` for this server, as byog will launch it (host and port stand-ins)."""
    model = PreparedModel(
        path=PLACEHOLDER_MODEL, served_name="model", tokenizer="model", max_model_len=plan.model.max_model_len
    )
    return vllm_serve_args(plan.servers[name], model, "127.0.0.1", 8000)


def vllm_arg_problems(plan: Plan) -> tuple[list[str], list[str]]:
    """(problems, not checked) for every server's vLLM arguments."""
    problems: list[str] = []
    notes: list[str] = []
    by_python: dict[str, dict[str, list[str]]] = {}
    for name, config in plan.servers.items():
        launched = config.launched()
        if launched is None:
            continue  # an endpoint: byog starts nothing there
        if not config.runs_this_hosts_vllm:
            if launched.python:
                notes.append(
                    f"server '{name}' ({config.runtime}): its python '{launched.python}' is checked where it runs, "
                    "on every node as that server starts, before any of its steps"
                )
            notes.append(
                f"server '{name}' ({config.runtime}): its vLLM arguments are parsed when it starts, by the vLLM "
                f"{config.vllm_is}; reaching it before launch means a container or remote start, which is the "
                "launch itself"
            )
            continue
        python = server_python(launched)
        if launched.python:
            try:
                checked_vllm(name, python)
            except UsageError as err:
                problems.append(str(err))
                continue
        by_python.setdefault(python, {})[name] = serve_args_for_check(plan, name)
    for python, servers in by_python.items():
        answer = _cached_probe(python, servers)
        if "error" in answer:
            if python == sys.executable:
                notes.append(f"vLLM arguments of {', '.join(servers)}: {answer['error']}")
            else:  # a server's own environment: its vLLM must import there, or the server cannot start
                problems += [
                    f"server '{name}': the vLLM in python '{python}' cannot start ({answer['error']}): fix that "
                    "environment so `import vllm` works there, or name another 'python'"
                    for name in servers
                ]
            continue
        for name, found in answer["results"].items():
            problems += [f"server '{name}': {p}" for p in found]
    return problems, notes


def _cached_probe(python: str, servers: dict[str, list[str]]) -> dict[str, Any]:
    """The probe's answer for every server; each server's arguments parsed once per vLLM install."""
    who = _probe(python, {}, "--identity")
    if "error" in who:
        return who
    if who.get("vllm") is None:
        return {"error": f"vLLM is not installed in {python}"}

    def cached(args: list[str]) -> Path:
        key = hashlib.sha256(json.dumps([python, who, args]).encode()).hexdigest()[:32]
        return cache_dir() / "vllm-args" / f"{key}.json"

    results: dict[str, list[str]] = {}
    for name, args in servers.items():
        with contextlib.suppress(OSError, ValueError):  # not answered yet (or unreadable): ask again
            results[name] = json.loads(cached(args).read_text(encoding="utf-8"))
    missing = {name: args for name, args in servers.items() if name not in results}
    if missing:
        answer = _probe(python, {"servers": missing})
        if "error" in answer:
            return answer
        for name, found in answer["results"].items():
            atomic_write_json(cached(missing[name]), found)
            results[name] = found
    return {**who, "results": results}


# --- all of it ------------------------------------------------------------------------------


def preflight(
    plan: Plan,
    where: str,
    *,
    for_run: bool,
    env: dict[str, Any],
    claims: list[Claim] | None = None,
    data_dir: Path | None = None,
) -> list[str]:
    """Every check that runs before a server starts; raises ``PlanProblems`` with all it found.

    ``for_run``: placeholders are problems (``byog plan`` shows them as values to set instead).
    ``claims`` (``byog run --claims``): each must name a server, point id and eval of the plan.
    ``data_dir``: where the run reads eval data (``--data-dir``).
    Returns what could not be checked before launch, each with why.
    """
    placeholders = bool(find_placeholders(plan))
    notes: list[str] = []
    checks: list[Callable[[], object]] = []
    if any(config.runs_this_hosts_vllm for config in plan.servers.values()):
        checks.append(lambda: check_model_reference(plan.model, where=""))
    elif any(config.launched() is not None for config in plan.servers.values()):
        notes.append(f"model {plan.model.path}: read where its servers run, not on this host: checked as they start")
    if for_run:
        checks.insert(0, lambda: require_no_placeholders(plan))
    checks += [
        lambda: check_plan_fits(plan),
        lambda: check_plan_kv(plan),
        lambda: check_stock_roles(resolve_control(plan, env)),
        lambda: check_interleave(plan),
    ]
    problems = (
        [p.removeprefix(": ") for p in _collected(checks)]
        + task_problems(plan)
        + eval_size_problems(plan, data_dir)
        + trace_problems(plan)
        + secret_problems(plan)
    )
    problems += plan_claim_problems(plan, claims or [])
    if placeholders:
        notes.append("vLLM arguments: the plan still has placeholders")
    else:
        found, arg_notes = vllm_arg_problems(plan)
        problems += found
        notes += arg_notes
    if problems:
        raise PlanProblems(where, problems, notes=notes)
    return notes
