"""The plan a reproduction runs (``byog reproduce``), built from a bundle's plan: recorded as its
plan.yaml so verify re-derives it.

The plan is constructed, not filtered: it starts empty and takes from the bundle only the fields
``byog.plans.copied_fields`` lists as measurement (``copied``), for the chosen points, servers
and a few eval items; everything about *where and how* a server runs comes from the maintainer
(the command line, or ``[reproduce]`` in byog's config file) or byog's defaults: runtime, image,
hosts, ssh options, node python, environment, endpoint URL, model path. What is copied is vetted:
each kept server's ``vllm serve`` flags and the numerics ``control`` and ``envelope_variant``
changes pass ``byog.plans.server_flags``'s allowlist, eval tasks must be byog's, their
``gen_kwargs`` sampling settings (``byog.plans.gen_kwargs``); the first thing that fails is
refused in one sentence that names it. Point ids stay those of the original (an id names the
workload and its coordinates), so a reproduced point pairs with the original's.

Defaults run nothing remote: a server runs on the local runtime, or in docker only with an image
the maintainer names (``--image``) or one pinned by a digest the maintainer allows
(``allowed_image_digests``). A server the bundle runs over ssh, or in an image not allowed, is
refused in one sentence. ``dropped`` lists what the bundle had that the reproduction leaves out,
each with the option that keeps it.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from byog.core.errors import UsageError
from byog.core.safe_text import one_line
from byog.core.settings import config_file, config_setting
from byog.plans.copied_fields import copied, listed
from byog.plans.expand import expand_plan
from byog.plans.gen_kwargs import vet_gen_kwargs, vet_task
from byog.plans.load import validation_message
from byog.plans.numerics_menu import is_menu_name
from byog.plans.numerics_roles import describe_change, menu_name
from byog.plans.server_flags import vet_server, vet_stock_change
from byog.schemas.plan import (
    SERVER_CONFIGS,
    AgenticWorkload,
    Plan,
    ServerConfig,
    StockChange,
    server_config,
)

_LOADS = {"batch": "batch_sizes", "concurrency": "concurrencies", "rate": "rates"}


CONFIG_SECTION = "reproduce"


def _words(value: str) -> list[str]:
    return value.replace(",", " ").split()


@dataclass
class Overrides:
    """How the reproducing machine starts servers; each entry as given on the command line
    (``[SERVER=]VALUE``: a value without a server in front is for every server)."""

    images: list[str] = field(default_factory=list)  # "[SERVER=]IMAGE": run in docker, this image
    model_path: str | None = None
    server_args: list[str] = field(default_factory=list)  # "[SERVER=]ARG": an ARG starting with '-' is for every server
    endpoints: list[str] = field(default_factory=list)  # "SERVER=URL"
    hosts: list[str] = field(default_factory=list)  # "[SERVER=]HOST", rank 0 first: ssh, or Docker engines
    ssh_options: list[str] = field(default_factory=list)  # extra `ssh` options, every host
    pythons: list[str] = field(default_factory=list)  # "[SERVER=]PYTHON": the maintainer's own interpreter or venv
    env: list[str] = field(default_factory=list)  # "[SERVER=]KEY=VALUE"
    allow_flags: list[str] = field(default_factory=list)  # flags (or config keys) the bundle may pass after all
    allowed_image_digests: list[str] = field(default_factory=list)  # "sha256:...": the bundle's images that may run

    @classmethod
    def from_config(cls, **given: Any) -> Overrides:
        """The command line's values over ``[reproduce]`` in byog's config file (``image``,
        ``model_path``, ``ssh_options``, ``python``, ``env``, ``allow_flags``,
        ``allowed_image_digests``); list settings are added to."""
        opts = cls(**given)
        image = config_setting(CONFIG_SECTION, "image")
        if image and not opts.images:
            opts.images = [image]
        opts.model_path = opts.model_path or config_setting(CONFIG_SECTION, "model_path") or None
        python = config_setting(CONFIG_SECTION, "python") or config_setting(CONFIG_SECTION, "node_python")
        if python and not opts.pythons:
            opts.pythons = [python]
        opts.ssh_options = shlex.split(config_setting(CONFIG_SECTION, "ssh_options")) + opts.ssh_options
        opts.env = _words(config_setting(CONFIG_SECTION, "env")) + opts.env
        opts.allow_flags = _words(config_setting(CONFIG_SECTION, "allow_flags")) + opts.allow_flags
        opts.allowed_image_digests += _words(config_setting(CONFIG_SECTION, "allowed_image_digests"))
        return opts

    def describe(self) -> list[str]:
        out = [f"--image {v}" for v in self.images] + [f"--server-arg {v}" for v in self.server_args]
        out += [f"--endpoint {v}" for v in self.endpoints] + [f"--host {v}" for v in self.hosts]
        out += [f"--ssh-option {v}" for v in self.ssh_options] + [f"--env {v}" for v in self.env]
        out += [f"--allow-flag {v}" for v in self.allow_flags]
        out += [f"--python {v}" for v in self.pythons]
        return out + ([f"--model-path {self.model_path}"] if self.model_path else [])


def _split(value: str, servers: Sequence[str], flag: str, *, required: bool) -> tuple[list[str], str]:
    """'SERVER=VALUE' -> ([SERVER], VALUE); a VALUE with no 'SERVER=' in front (an argument starts
    with '-') is for every server, unless the flag needs a server."""
    head, sep, tail = value.partition("=")
    if sep and not head.startswith("-"):
        if head not in servers:
            raise UsageError(f"{flag} {value}: '{head}' is not a server of the plan ({', '.join(servers)})")
        return [head], tail
    if required:
        raise UsageError(f"{flag} takes SERVER=VALUE, not '{value}'")
    return list(servers), value


def _per_server(values: Sequence[str], names: Sequence[str], flag: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {name: [] for name in names}
    for value in values:
        targets, item = _split(value, names, flag, required=False)
        for name in targets:
            out[name].append(item)
    return out


def _env(values: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, str]]:
    """'[SERVER=]KEY=VALUE' entries -> each server's environment."""
    out: dict[str, dict[str, str]] = {name: {} for name in names}
    for value in values:
        head, _, rest = value.partition("=")
        targets, assignment = ([head], rest) if head in names and "=" in rest else (list(names), value)
        key, sep, setting = assignment.partition("=")
        if not sep or not key:
            raise UsageError(f"--env takes [SERVER=]KEY=VALUE, not '{value}'")
        for name in targets:
            out[name][key] = setting
    return out


def _runtime_fields(
    name: str, bundle: ServerConfig, overrides: Overrides, chosen: dict[str, list[str]]
) -> dict[str, Any]:
    """Runtime, image, url and hosts for one server: the maintainer's, or the safe default."""
    if chosen["url"]:
        return {"runtime": "endpoint", "url": chosen["url"][-1]}
    image = chosen["image"][-1] if chosen["image"] else None
    if chosen["hosts"]:
        if image:
            return {"runtime": "docker", "image": image, "hosts": chosen["hosts"]}
        return {"runtime": "ssh", "hosts": chosen["hosts"]}
    if image:
        return {"runtime": "docker", "image": image}
    hint = f"--policy's allowed_image_digests (or allowed_image_digests under [{CONFIG_SECTION}] in {config_file()})"
    return bundle.reproduced_as(name, overrides.allowed_image_digests, hint)


@dataclass(frozen=True)
class Selection:
    """What of a bundle a reproduction re-runs: point ids, servers, and eval items per task (None: the bundle's)."""

    points: Sequence[str] | None = None  # None: every point
    servers: Sequence[str] | None = None  # None: every server
    eval_items: int | None = None


def _kept_servers(plan: Plan, selection: Selection) -> list[str]:
    wanted = list(plan.servers) if selection.servers is None else list(selection.servers)
    unknown = sorted(set(wanted) - set(plan.servers))
    if unknown:
        raise UsageError(f"no server {', '.join(unknown)} in plan '{plan.name}' (it has {', '.join(plan.servers)})")
    if not wanted:
        raise UsageError(f"a reproduction of plan '{plan.name}' needs at least one of its servers")
    return [s for s in plan.servers if s in wanted]


def _workloads(plan: Plan, point_ids: Sequence[str] | None, kept: list[str]) -> list[dict[str, Any]]:
    """Each workload at only the coordinates (load, ISL, OSL) of the chosen points, on the kept servers."""
    points = {p.point_id: p for p in expand_plan(plan)}
    ids = list(points) if point_ids is None else list(point_ids)
    missing = sorted(set(ids) - set(points))
    if missing:
        raise UsageError(f"no point {', '.join(missing)} in plan '{plan.name}' (it has {', '.join(points)})")
    chosen = [points[pid] for pid in ids]
    out: list[dict[str, Any]] = []
    for w in plan.workloads:
        if isinstance(w, AgenticWorkload):
            continue
        name = w.name or w.kind
        mine = [p for p in chosen if p.workload == name]
        on = [s for s in plan.servers_for(w) if s in kept]
        if not mine or not on:
            continue
        data = copied(w)
        data.update(name=name, servers=on, isl=sorted({p.isl for p in mine}), osl=sorted({p.osl for p in mine}))
        loads: dict[str, list[Any]] = {"batch": [p.batch_size for p in mine], "rate": [p.rate for p in mine]}
        loads["concurrency"] = [p.concurrency for p in mine]
        if not (w.kind == "rate" and data.get("search") is not None):  # a search picks its own rates
            data[_LOADS[w.kind]] = sorted(set(loads[w.kind]))
        out.append(data)
    return out


def _evals(plan: Plan, kept: list[str], eval_items: int | None) -> list[dict[str, Any]]:
    """Each eval on the kept servers, on at most ``eval_items`` items, its task and settings vetted."""
    out: list[dict[str, Any]] = []
    if eval_items == 0:
        return out
    for spec in plan.evals:
        on = [s for s in plan.servers_for(spec) if s in kept]
        if not on:
            continue
        vet_task(spec.task)
        vet_gen_kwargs(spec.task, spec.gen_kwargs)
        limit = spec.limit if eval_items is None else min(spec.limit or eval_items, eval_items)
        out.append({**copied(spec), "servers": on, "limit": limit})
    return out


def _vet_numerics_change(field: str, change: StockChange | None, allowed: Sequence[str]) -> None:
    """A name from byog's menu runs byog's own arguments; a custom change runs only when the maintainer
    allows the field (``--allow-flag numerics.control``), and its flags and env pass the allowlist too."""
    if change is None:
        return
    if isinstance(change, str):
        if not is_menu_name(change):
            raise UsageError(f"the bundle's {field} {one_line(change, 80)!r} is not on byog's numerics menu")
        return
    if menu_name(change) is not None:
        return
    vet_stock_change(field, list(change.args), dict(change.env), allowed)
    if field not in allowed:
        raise UsageError(
            f"the bundle's {field} is a custom change ({one_line(describe_change(change), 160)}), not a name from "
            f"byog's numerics menu; byog reproduce runs it only when you allow it (--allow-flag {field})"
        )


def _numerics(plan: Plan, kept: list[str], allowed: Sequence[str]) -> dict[str, Any] | None:
    """The numerics section, its stock changes through the flag allowlist."""
    if plan.numerics is None:
        return None
    for what in ("control", "envelope_variant"):
        _vet_numerics_change(f"numerics.{what}", getattr(plan.numerics, what), allowed)
    data = copied(plan.numerics)
    if isinstance(data["conformance"], list):
        data["conformance"] = [s for s in data["conformance"] if s in kept]
    return data


def _servers(plan: Plan, kept: list[str], overrides: Overrides) -> dict[str, Any]:
    """Each kept server: the bundle's measured settings (flags vetted), the maintainer's runtime and environment."""
    chosen: dict[str, dict[str, list[str]]] = {
        "image": _per_server(overrides.images, kept, "--image"),
        "hosts": _per_server(overrides.hosts, kept, "--host"),
        "args": _per_server(overrides.server_args, kept, "--server-arg"),
        "python": _per_server(overrides.pythons, kept, "--python"),
        "url": {name: [] for name in kept},
    }
    for value in overrides.endpoints:
        targets, url = _split(value, kept, "--endpoint", required=True)
        for name in targets:
            chosen["url"][name].append(url)
    env = _env(overrides.env, kept)
    servers: dict[str, Any] = {}
    for name in kept:
        bundle = plan.servers[name]
        vet_server(name, bundle, overrides.allow_flags)
        mine = {key: chosen[key][name] for key in chosen}
        config = copied(bundle)
        config["args"] = [*config["args"], *mine["args"]]
        config.update(_runtime_fields(name, bundle, overrides, mine))
        config["env"] = env[name]
        runs_as = SERVER_CONFIGS[config["runtime"]]
        if "ssh_options" in runs_as.model_fields:
            config["ssh_options"] = list(overrides.ssh_options)
        config.pop("python", None)  # a bundle's interpreter path is never run: the maintainer names their own
        if runs_as.runs_host_python and mine["python"]:
            config["python"] = mine["python"][-1]
        config = {k: v for k, v in config.items() if k in runs_as.model_fields}
        try:
            servers[name] = server_config(**config).model_dump(mode="json")
        except ValidationError as err:
            raise UsageError(f"server '{name}' as you run it: {validation_message(err)}") from None
    return servers


def _model(plan: Plan, servers: dict[str, Any], overrides: Overrides) -> dict[str, Any]:
    """The bundle's context length; the model itself the maintainer's (or byog's built-in one)."""
    model = copied(plan.model)
    launched = [name for name, config in servers.items() if server_config(**config).launched()]
    if overrides.model_path:
        model["path"] = overrides.model_path
    elif launched and not plan.model.path.startswith("builtin:"):
        raise UsageError(
            f"the bundle serves model '{plan.model.path}', and byog reproduce loads only a model you name: pass "
            f"--model-path PATH (or model_path under [{CONFIG_SECTION}] in {config_file()})"
        )
    else:
        model["path"] = plan.model.path  # byog's built-in model, or a name only (nothing loads it)
    return model


def _description(plan: Plan, points: Sequence[str] | None) -> str:
    what = "every point" if points is None else ", ".join(points) or "evals only"
    return f"a reproduction of {plan.name}: {what}"


def reproduction_plan(plan: Plan, overrides: Overrides, selection: Selection | None = None) -> Plan:
    """The plan a reproduction of ``plan`` runs on this machine, built from the bundle's measurement alone."""
    selection = selection or Selection()
    kept = _kept_servers(plan, selection)
    servers = _servers(plan, kept, overrides)
    data = copied(plan)
    data.update(
        description=_description(plan, selection.points),
        model=_model(plan, servers, overrides),
        servers=servers,
        workloads=_workloads(plan, selection.points, kept),
        evals=_evals(plan, kept, selection.eval_items),
        numerics=_numerics(plan, kept, overrides.allow_flags),
    )
    data["baseline"] = plan.baseline if plan.baseline in kept else kept[0]
    if plan.pairs is not None or plan.baseline not in kept:
        data["pairs"] = [p for p in data["pairs"] or [] if p["candidate"] in kept and p["baseline"] in kept]
    try:
        return Plan.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top level)"
        raise UsageError(
            f"the reproduction of plan '{plan.name}' is not a valid plan at '{where}': {first['msg']}"
        ) from None


# A bundle's interpreter path names a file on the contributor's machine: byog reproduce never runs it.
NEVER_RUN_PYTHON = "python (a bundle's interpreter is never run: name your own, with the build it recorded)"


@dataclass(frozen=True)
class Dropped:
    """Something a bundle's server (or model) had that its reproduction does not use, and the option that keeps it."""

    server: str | None  # None: the plan's model
    what: str  # "env", "image", "host", "ssh option", "node python", "url", "ray start args", ...
    value: str
    option: str | None  # the command-line option that keeps it; None: no option does
    key: str | None = None  # an env var's name (``value`` is then its value)
    per_server: bool = True  # the option takes SERVER=...
    ours: str | None = None  # what the option takes in place of the bundle's value: the maintainer's own

    def keep(self, value: str | None = None) -> str | None:
        """The option that keeps it, shell-quoted, with ``value`` (e.g. redacted) in place of the bundle's."""
        if self.option is None:
            return None
        arg = (f"{self.server}=" if self.per_server and self.server else "") + (f"{self.key}=" if self.key else "")
        arg += self.ours or (self.value if value is None else value)
        return shlex.quote(f"{self.option}={arg}") if arg.startswith("-") else shlex.join([self.option, arg])


def _dropped_server(name: str, bundle: ServerConfig, ran: ServerConfig) -> list[Dropped]:
    """What the bundle's server set that the reproduction's does not: a field either runtime lacks reads as unset."""

    def mine(field: str) -> Any:
        return getattr(bundle, field, None)

    def theirs(field: str) -> Any:
        return getattr(ran, field, None)

    ran_env = theirs("env") or {}
    out = [Dropped(name, "env", v, "--env", key=k) for k, v in (mine("env") or {}).items() if ran_env.get(k) != v]
    for key, option in (("image", "--image"), ("url", "--endpoint")):
        if mine(key) and mine(key) != theirs(key):
            out.append(Dropped(name, key, mine(key), option))
    if mine("hosts") and mine("hosts") != theirs("hosts"):
        out += [Dropped(name, "host", host, "--host") for host in mine("hosts")]
    if mine("ssh_options") and mine("ssh_options") != theirs("ssh_options"):
        out += [Dropped(name, "ssh option", o, "--ssh-option", per_server=False) for o in mine("ssh_options")]
    if mine("python") and mine("python") != theirs("python"):
        out.append(Dropped(name, NEVER_RUN_PYTHON, mine("python"), "--python", ours="YOUR_PYTHON"))
    for what in ("platform", "gpus"):
        if mine(what) is not None and mine(what) != theirs(what):
            out.append(Dropped(name, what, str(mine(what)), None))
    if mine("ray_args"):
        out.append(Dropped(name, "ray start args", shlex.join(mine("ray_args")), None))
    return out


# Maintainer-owned fields ``_dropped_server`` and the model lines above name with the option that keeps
# them; the census (``_census``) lists every other one.
_WITH_OPTIONS = frozenset(
    {"env", "image", "url", "hosts", "ssh_options", "python", "platform", "gpus", "ray_args"}
    | {"path", "served_name", "tokenizer"}
)
# Maintainer-owned fields a reproduction always sets itself, so listing them would say nothing.
_ALWAYS_ITS_OWN = {
    "schema_version": "the current plan schema",
    "description": "byog writes the reproduction's own description",
}
_MATCH_BY = ("name", "task", "candidate", "baseline")  # how a list's items pair with the reproduction's


def _key(item: Any) -> tuple[Any, ...]:
    return tuple(getattr(item, f, None) for f in _MATCH_BY) if isinstance(item, BaseModel) else (item,)


def _census(bundle: BaseModel, ran: BaseModel, where: str, server: str | None) -> list[Dropped]:
    """Walk the plan as ``copied_fields`` divides it: every maintainer-owned field the bundle set (not
    its default) that the reproduction does not hold, and the same in every copied sub-model, paired
    by key with the reproduction's (an item the reproduction did not select is not walked)."""
    copied_fields, owned = listed(type(bundle)) or (frozenset(), frozenset())
    out = []
    for name in sorted(owned - _WITH_OPTIONS - _ALWAYS_ITS_OWN.keys()):
        value, info = getattr(bundle, name, None), type(bundle).model_fields.get(name)
        default = info.get_default(call_default_factory=True) if info is not None else None
        if value != default and value != getattr(ran, name, None):
            shown = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
            out.append(Dropped(server, f"{where}{name}", shown, None, per_server=False))
    for name in sorted(copied_fields):
        mine, theirs = getattr(bundle, name, None), getattr(ran, name, None)
        if isinstance(mine, BaseModel) and isinstance(theirs, BaseModel):
            out += _census(mine, theirs, f"{where}{name}.", server)
        elif isinstance(mine, dict) and isinstance(theirs, dict):
            for key in [k for k in mine if k in theirs and isinstance(mine[k], BaseModel)]:
                inner = key if name == "servers" else server
                out += _census(mine[key], theirs[key], "" if name == "servers" else f"{where}{name}.{key}.", inner)
        elif isinstance(mine, list) and isinstance(theirs, list):
            pairs = {_key(t): t for t in theirs if isinstance(t, BaseModel)}
            for index, item in enumerate(mine):
                match = pairs.get(_key(item)) if isinstance(item, BaseModel) else None
                if match is not None:
                    out += _census(item, match, f"{where}{name}[{index}].", server)
    return out


def dropped(bundle: Plan, reproduction: Plan) -> list[Dropped]:
    """Every setting of ``bundle`` that ``reproduction`` leaves out: each server's env, image, hosts,
    endpoint (with the option that keeps it), the model's, and every other maintainer-owned field
    the bundle set (``_census``: ``pairs[].interleave``, ``evals[].passes``, a server's runtime, ...)."""
    out: list[Dropped] = []
    for name, ran in reproduction.servers.items():
        out += _dropped_server(name, bundle.servers[name], ran)
    for what, option in (("path", "--model-path"), ("served_name", None), ("tokenizer", None)):
        value = getattr(bundle.model, what)
        if value is not None and value != getattr(reproduction.model, what):
            out.append(Dropped(None, f"model {what}", value, option, per_server=False))
    return out + _census(bundle, reproduction, "", None)
