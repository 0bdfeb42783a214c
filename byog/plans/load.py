"""Load a plan from YAML, with errors that name the file and the key."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from byog.core.errors import UsageError
from byog.plans.numerics_menu import check_menu_names
from byog.schemas.migrate import migrate
from byog.schemas.plan import SERVER_CONFIGS, Plan

# Discriminated unions add the tag to the location; dropped so the key reads as written.
WORKLOAD_TAGS = frozenset({"batch", "concurrency", "rate", "agentic", "random", "dataset"})

DEFAULT_PROFILE = "smoke"


def builtin_profiles() -> list[str]:
    folder = resources.files("byog.plans") / "profiles"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def resolve_plan_path(ref: str | None) -> tuple[str, str]:
    """Return (label, yaml text) for a file path or the name of a built-in profile."""
    ref = ref or DEFAULT_PROFILE
    path = Path(ref)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        if not path.is_file():
            raise UsageError(f"plan file {ref} does not exist")
        return str(path), path.read_text(encoding="utf-8")
    name = ref.removeprefix("profiles/")
    if name in builtin_profiles():
        text = (resources.files("byog.plans") / "profiles" / f"{name}.yaml").read_text(encoding="utf-8")
        return f"built-in profile '{name}'", text
    raise UsageError(f"'{ref}' is neither a plan file nor a built-in profile ({', '.join(builtin_profiles())})")


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


def validation_message(err: ValidationError) -> str:
    """The first problem as one sentence: "'servers.x': `image` is not a field of a local server"."""
    first = err.errors()[0]
    loc, message = list(first["loc"]), first["msg"].removeprefix("Value error, ")
    # A server's runtime tag follows its name; the workloads' and prompts' tags follow a list index or a key.
    runtime = None
    if len(loc) >= 3 and loc[0] == "servers" and loc[2] in SERVER_CONFIGS:
        runtime = str(loc.pop(2))
    loc = [x for x in loc if x not in WORKLOAD_TAGS]
    if runtime is not None and len(loc) == 3 and first["type"] in ("extra_forbidden", "missing"):
        field = loc.pop()
        server = _a_server_of(runtime)
        message = (
            f"`{field}` is not a field of {server}"
            if first["type"] == "extra_forbidden"
            else f"{server} needs `{field}`"
        )
    elif first["type"] == "extra_forbidden":
        message = "unknown key"
    more = f" (and {len(err.errors()) - 1} more problem(s))" if len(err.errors()) > 1 else ""
    return f"'{_key_path(tuple(loc))}': {message}{more}"


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
        raise UsageError(f"{label}: {validation_message(err)}") from None
    check_menu_names(plan, label)
    return plan


def load_plan(ref: str | None = None) -> tuple[Plan, str]:
    """Load a plan; returns it and the exact YAML text (recorded verbatim in the run directory)."""
    label, text = resolve_plan_path(ref)
    return parse_plan(text, label), text
