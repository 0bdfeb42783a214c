"""Which servers the numerics differential launches for each baseline, and why.

Beside the plan's own servers, every baseline of a comparison gets two stock derivatives
(docs/numerics.md):

- its **control**: the baseline with the plan's ``numerics.control`` change (a name from byog's
  menu, ``byog.plans.numerics_menu``; unset: the default for the platform the baseline runs on,
  ``resolve_control``), a change of known size the differential must see, and
- its **envelope variant**: the baseline with ``numerics.envelope_variant`` (default ``eager``,
  ``--enforce-eager``), a legitimate stock variant whose distance from the baseline is the
  implementation noise a candidate is measured in.

``change_of`` is the one home of what a name launches: the arguments are byog's, built from the
name (a reproduction builds them the same way, never from a bundle's arguments).

A derivative whose launch equals a plan server's (same arguments after last-wins parsing, same
environment) is that server, launched once. The envelope variant may never be a candidate of its
baseline (a candidate would be judged against itself), and neither derivative may equal the
baseline. A baseline of ``runtime: endpoint`` has neither: byog did not launch it, so it cannot
launch it changed, and a copy of its URL would be the baseline again, a control that can never be
seen; its candidates are then "insensitive", and the summary says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from byog.core.errors import UsageError
from byog.plans.numerics_menu import (
    DEFAULT_CONTROL,
    MENU,
    default_control,
    describe_entry,
    detect_platform,
    menu_change,
    menu_name_of,
)
from byog.schemas.plan import LaunchedConfig, Plan, ServerConfig, StockChange, StockVariant

CONTROL_SUFFIX = ".control"
VARIANT_SUFFIX = ".variant"


@dataclass(frozen=True)
class StockRoles:
    """One baseline's control and envelope variant, each a server name (a plan server or a derivative)."""

    baseline: str
    control: str | None  # None: the plan's control cannot run here (check_stock_roles or not_derived says why)
    variant: str | None
    not_derived: str | None = None  # why byog derives neither (an endpoint baseline)


def parsed_args(args: list[str]) -> dict[str, str | None]:
    """``vllm serve`` arguments as flag -> value, the last value of a flag winning; a bare flag maps to None."""
    parsed: dict[str, str | None] = {}
    positional = 0
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and "=" in arg:
            flag, value = arg.split("=", 1)
            parsed[flag] = value
        elif arg.startswith("--"):
            has_value = i + 1 < len(args) and not args[i + 1].startswith("--")
            parsed[arg] = args[i + 1] if has_value else None
            i += has_value
        else:
            parsed[f"#{positional}"] = arg
            positional += 1
        i += 1
    return parsed


def _launch_key(config: ServerConfig) -> str:
    """Two launches with the same key run the same server: arguments as parsed, environment, the rest."""
    rest = config.model_dump(mode="json", exclude={"args", "env"})
    return json.dumps([parsed_args(config.args), getattr(config, "env", {}), rest], sort_keys=True)


ROPE_PLACEHOLDER = "<the model's rope_theta x1.05, from its config.json at launch>"


def menu_name(change: StockChange | None) -> str | None:
    """The menu name of a change: the name itself, a written-out change equal to an entry, else None (custom)."""
    if change is None:
        return DEFAULT_CONTROL["unknown"]
    return change if isinstance(change, str) else menu_name_of(change)


def change_of(change: StockChange | None, model_config: Mapping[str, Any] | None = None) -> StockVariant:
    """The launch change a plan's control or envelope variant stands for: a menu name's byog-owned
    arguments (``rope-theta`` from ``model_config``, a placeholder without it), or the custom change."""
    name = change if isinstance(change, str) else DEFAULT_CONTROL["unknown"] if change is None else None
    if name is None:
        assert isinstance(change, StockVariant)
        return change
    if name in MENU and MENU[name].model_dependent and model_config is None:
        return StockVariant(args=["--hf-overrides", ROPE_PLACEHOLDER])
    return menu_change(name, model_config)


def _model_dependent(change: StockChange | None) -> bool:
    return isinstance(change, str) and change in MENU and MENU[change].model_dependent


Launched = TypeVar("Launched", bound=LaunchedConfig)


def derive(baseline: Launched, change: StockVariant) -> Launched:
    return baseline.model_copy(update={"args": [*baseline.args, *change.args], "env": {**baseline.env, **change.env}})


def describe_change(change: StockChange | None) -> str:
    """A name as its menu line; a custom change as its arguments and environment."""
    name = menu_name(change)
    if name is not None:
        return describe_entry(name)
    assert isinstance(change, StockVariant)
    parts = [" ".join(change.args)] if change.args else []
    parts += [f"{k}={v}" for k, v in sorted(change.env.items())]
    return "custom: " + (", ".join(parts) or "no change")


@dataclass(frozen=True)
class ControlChoice:
    name: str | None  # the menu name (None: a custom change)
    why: str  # one sentence: the plan named it, or the platform default and what byog saw


def control_choice(plan: Plan, env: Mapping[str, Any] | None) -> ControlChoice:
    """Which control the plan's baselines get, and why. ``env``: the fingerprint (env.json) of the
    machine byog runs on, where local and docker servers run; a baseline elsewhere (ssh, slurm)
    is on a platform byog has not seen when it plans, so the portable default applies."""
    spec = plan.numerics
    if spec is not None and spec.control is not None:
        name = menu_name(spec.control)
        return ControlChoice(name, f"{describe_change(spec.control)} (named by the plan)")
    baselines = [plan.servers[b] for _, b in plan.comparisons]
    remote = sorted({c.runtime for c in baselines if c.launched() and c.elsewhere()})
    platform = detect_platform(None if remote else env)
    name, why = default_control(platform)
    if remote:
        why += f" (a baseline runs on {', '.join(remote)}; name a control for its platform, e.g. fp8-kv on CUDA >= 8.9)"
    return ControlChoice(name, why)


def resolve_control(plan: Plan, env: Mapping[str, Any] | None) -> Plan:
    """The plan with its control named: the platform default when the plan names none."""
    if plan.numerics is None or plan.numerics.control is not None:
        return plan
    name = control_choice(plan, env).name
    return plan.model_copy(update={"numerics": plan.numerics.model_copy(update={"control": name})})


def _resolve(plan: Plan) -> tuple[dict[str, StockRoles], list[str]]:
    """Each baseline's roles, and one sentence for each role the plan sets up wrongly (that role left out)."""
    if plan.numerics is None:
        return {}, []
    spec = plan.numerics
    by_key = {_launch_key(config): name for name, config in plan.servers.items()}
    roles: dict[str, StockRoles] = {}
    problems: list[str] = []
    for baseline in dict.fromkeys(b for _, b in plan.comparisons):
        base = plan.servers[baseline].launched()
        if base is None:
            roles[baseline] = StockRoles(
                baseline=baseline,
                control=None,
                variant=None,
                not_derived=(
                    f"the baseline '{baseline}' is an endpoint byog did not launch, so byog cannot launch its "
                    f"numerics control ({describe_change(spec.control)}) or envelope variant "
                    f"({describe_change(spec.envelope_variant)}); give it a runtime byog launches"
                ),
            )
            continue
        candidates = {c for c, b in plan.comparisons if b == baseline}
        names: list[str | None] = []
        for what, change, suffix in (
            ("control", spec.control, CONTROL_SUFFIX),
            ("envelope_variant", spec.envelope_variant, VARIANT_SUFFIX),
        ):
            key = _launch_key(derive(base, change_of(change)))
            # a model-dependent change is byog's own override, never a plan server or the baseline
            found = None if _model_dependent(change) else baseline if key == _launch_key(base) else by_key.get(key)
            problem = None
            if found is None:
                found = baseline + suffix
                if found in plan.servers:
                    problem = f"a server is named '{found}', the name byog gives the numerics {what} of '{baseline}'"
            elif found == baseline:
                problem = (
                    f"numerics.{what} ({describe_change(change)}) leaves the baseline '{baseline}' as it is; "
                    "name a change its launch does not already have"
                )
            elif what == "envelope_variant" and found in candidates:
                problem = (
                    f"numerics.envelope_variant ({describe_change(change)}) is the candidate '{found}' itself, "
                    "which would be judged against its own noise; name another stock variant (e.g. chunked-1024)"
                )
            if problem is not None:
                problems.append(problem)
            names.append(None if problem is not None else found)
        roles[baseline] = StockRoles(baseline=baseline, control=names[0], variant=names[1])
    return roles, problems


def stock_roles(plan: Plan) -> dict[str, StockRoles]:
    """baseline -> its control and envelope variant, for every baseline of a comparison (with a numerics section)."""
    return _resolve(plan)[0]


def check_stock_roles(plan: Plan) -> None:
    """Refuse, before anything launches, a control or envelope variant that cannot do its job."""
    problems = _resolve(plan)[1]
    if problems:
        raise UsageError(problems[0])


def derived_servers(plan: Plan, model_config: Mapping[str, Any] | None = None) -> dict[str, ServerConfig]:
    """The derivatives byog launches beside the plan's servers: name -> launch (``model_config``: the
    model's config.json, for a change computed from it)."""
    if plan.numerics is None:
        return {}
    out: dict[str, ServerConfig] = {}
    for role in stock_roles(plan).values():
        base = plan.servers[role.baseline].launched()
        if base is None:  # an endpoint's roles are not derived
            continue
        for name, change in ((role.control, plan.numerics.control), (role.variant, plan.numerics.envelope_variant)):
            if name is not None and name not in plan.servers:
                out[name] = derive(base, change_of(change, model_config))
    return out


def launch_config(plan: Plan, server: str, model_config: Mapping[str, Any] | None = None) -> ServerConfig:
    """A plan server's launch, or a derivative's."""
    if server in plan.servers:
        return plan.servers[server]
    derived = derived_servers(plan, model_config)
    if server not in derived:
        raise UsageError(f"'{server}' is neither a server of the plan nor a numerics control or variant")
    return derived[server]
