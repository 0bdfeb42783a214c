"""Load a plan from YAML, with errors that name the file and the key."""

from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from byog.core.errors import PlanProblems, UsageError
from byog.plans.numerics_menu import check_menu_names
from byog.plans.tasks import TASKS
from byog.schemas.migrate import migrate
from byog.schemas.plan import SERVER_CONFIGS, Plan, ServerBase

# Discriminated unions add the tag to the location; dropped so the key reads as written.
WORKLOAD_TAGS = frozenset({"batch", "concurrency", "rate", "agentic", "random", "dataset"})

DEFAULT_PROFILE = "smoke"


def builtin_profiles() -> list[str]:
    folder = resources.files("byog.plans") / "profiles"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def plan_source(ref: str | None) -> tuple[str, bytes]:
    """Return (label, the file's bytes as given) for a file path or the name of a built-in profile."""
    ref = ref or DEFAULT_PROFILE
    path = Path(ref)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        if not path.is_file():
            raise UsageError(f"plan file {ref} does not exist")
        return str(path), path.read_bytes()
    name = ref.removeprefix("profiles/")
    if name in builtin_profiles():
        data = (resources.files("byog.plans") / "profiles" / f"{name}.yaml").read_bytes()
        return f"built-in profile '{name}'", data
    raise UsageError(f"'{ref}' is neither a plan file nor a built-in profile ({', '.join(builtin_profiles())})")


def plan_text_of(data: bytes, label: str) -> str:
    """A plan file's bytes as text, newlines read as Python's text mode reads them."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{label} is not UTF-8 (byte {err.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def resolve_plan_path(ref: str | None) -> tuple[str, str]:
    """Return (label, yaml text) for a file path or the name of a built-in profile."""
    label, data = plan_source(ref)
    return label, plan_text_of(data, label)


def _key_path(loc: tuple[object, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(top level)"


def _a_server_of(runtime: str) -> str:
    return f"{SERVER_CONFIGS[runtime].article} {runtime} server"


def _fields_of(annotation: Any) -> set[str]:
    """The keys a value of this type may hold: a model's fields, or those of every model of a union."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return set(annotation.model_fields)
    return set().union(*(_fields_of(arg) for arg in get_args(annotation))) if get_args(annotation) else set()


def _type_at(model: type[BaseModel], loc: list[Any]) -> Any:
    """The annotation at ``loc`` (keys, list indexes and union tags, as pydantic writes them) under ``model``."""
    current: Any = model
    for item in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            if item not in current.model_fields:
                return None
            current = current.model_fields[item].annotation
            continue
        args = [a for a in get_args(current) if a is not type(None)]
        origin = get_origin(current)
        if origin in (list, dict) and args:
            current = args[-1]
        elif args:  # a union: its tag (a runtime, a kind) picks the member, else the first model
            models = [a for a in _union_members(current) if isinstance(a, type) and issubclass(a, BaseModel)]
            tagged = [m for m in models if _tag_of(m) == item]
            current = tagged[0] if tagged else current
            if tagged:
                continue
            return _type_at(models[0], [item]) if models else None
    return current


def _union_members(annotation: Any) -> list[Any]:
    members: list[Any] = []
    for arg in get_args(annotation):
        if arg is ServerBase:  # a plan's server: the union of the registered runtimes' config classes
            members += SERVER_CONFIGS.values()
            continue
        members += _union_members(arg) if get_args(arg) and get_origin(arg) is not Literal else [arg]
    return members


def _tag_of(model: type[BaseModel]) -> str | None:
    for name in ("runtime", "kind"):
        field = model.model_fields.get(name)
        if field is not None and isinstance(field.default, str):
            return field.default
    return None


def _one_problem(problem: Any, siblings_missing: set[str], model: type[BaseModel]) -> str:
    loc, message = list(problem["loc"]), problem["msg"].removeprefix("Value error, ")
    # A server's runtime tag follows its name; the workloads' and prompts' tags follow a list index or a key.
    runtime = None
    if len(loc) >= 3 and loc[0] == "servers" and loc[2] in SERVER_CONFIGS:
        runtime = str(loc[2])
    near = ""
    if problem["type"] == "extra_forbidden":
        known = siblings_missing or _fields_of(_type_at(model, loc[:-1]))
        near = did_you_mean(str(loc[-1]), known)
    shown = [x for i, x in enumerate(loc) if x not in WORKLOAD_TAGS and not (runtime is not None and i == 2)]
    if runtime is not None and len(shown) == 3 and problem["type"] in ("extra_forbidden", "missing"):
        field = shown.pop()
        server = _a_server_of(runtime)
        message = (
            f"`{field}` is not a field of {server}{near}"
            if problem["type"] == "extra_forbidden"
            else f"{server} needs `{field}`"
        )
    elif problem["type"] == "extra_forbidden":
        message = f"unknown key{near}"
    return f"'{_key_path(tuple(shown))}': {message}"


def validation_problems(err: ValidationError, model: type[BaseModel] = Plan) -> list[str]:
    """Every problem, one sentence each: "'servers.x': `image` is not a field of a local server";
    an unknown key names the nearest field it could have meant (a required one missing beside it first)."""
    problems = err.errors()
    missing: dict[tuple[Any, ...], set[str]] = {}
    for p in problems:
        if p["type"] == "missing":
            missing.setdefault(tuple(p["loc"][:-1]), set()).add(str(p["loc"][-1]))
    return [_one_problem(p, missing.get(tuple(p["loc"][:-1]), set()), model) for p in problems]


def validation_message(err: ValidationError, model: type[BaseModel] = Plan) -> str:
    """Every problem in one sentence, separated by semicolons."""
    return "; ".join(validation_problems(err, model))


def did_you_mean(word: str, known: set[str]) -> str:
    """`` (did you mean `x`?)`` for the nearest of ``known``, or ``''``."""
    near = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean `{near[0]}`?)" if near else ""


def _raw_task_problems(data: dict[str, Any]) -> list[str]:
    """Eval task names as written, checked even where the plan's structure is refused."""
    evals = data.get("evals")
    if not isinstance(evals, list):
        return []
    found = []
    for i, spec in enumerate(evals):
        task = spec.get("task") if isinstance(spec, dict) else None
        if isinstance(task, str) and task not in TASKS:
            found.append(f"'evals[{i}].task': unknown eval task '{task}'{did_you_mean(task, set(TASKS))}")
    return found


def parse_plan(text: str, label: str) -> Plan:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise UsageError(f"{label} is not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{label} must be a YAML mapping with keys like 'name', 'model', 'servers'")
    data = migrate("plan", data, label=label)
    try:
        plan = Plan.model_validate(data)
    except ValidationError as err:
        raise PlanProblems(label, validation_problems(err) + _raw_task_problems(data)) from None
    check_menu_names(plan, label)
    return plan


def load_plan(ref: str | None = None) -> tuple[Plan, str]:
    """Load a plan; returns it and the exact YAML text (recorded verbatim in the run directory)."""
    label, text = resolve_plan_path(ref)
    return parse_plan(text, label), text
