"""Which servers the numerics differential launches for each baseline, and why.

Beside the plan's own servers, every baseline of a comparison gets two stock derivatives
(docs/numerics.md):

- its **control**: the baseline with the plan's ``numerics.control`` change (default
  ``--dtype float16``), a change of known size the differential must see, and
- its **envelope variant**: the baseline with ``numerics.envelope_variant`` (default
  ``--enforce-eager``), a legitimate stock variant whose distance from the baseline is the
  implementation noise a candidate is measured in.

A derivative whose launch equals a plan server's (same arguments after last-wins parsing, same
environment) is that server, launched once. The envelope variant may never be a candidate of its
baseline (a candidate would be judged against itself), and neither derivative may equal the
baseline. A baseline of ``runtime: endpoint`` has neither: byog did not launch it, so it cannot
launch it changed, and a copy of its URL would be the baseline again, a control that can never be
seen; its candidates are then "insensitive", and the summary says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from byog.core.errors import UsageError
from byog.schemas.plan import Plan, ServerConfig, StockVariant

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
    return json.dumps([parsed_args(config.args), config.env, rest], sort_keys=True)


def derive(baseline: ServerConfig, change: StockVariant) -> ServerConfig:
    return baseline.model_copy(update={"args": [*baseline.args, *change.args], "env": {**baseline.env, **change.env}})


def _describe(change: StockVariant) -> str:
    parts = [" ".join(change.args)] if change.args else []
    parts += [f"{k}={v}" for k, v in sorted(change.env.items())]
    return ", ".join(parts) or "no change"


def _resolve(plan: Plan) -> tuple[dict[str, StockRoles], list[str]]:
    """Each baseline's roles, and one sentence for each role the plan sets up wrongly (that role left out)."""
    if plan.numerics is None:
        return {}, []
    spec = plan.numerics
    by_key = {_launch_key(config): name for name, config in plan.servers.items()}
    roles: dict[str, StockRoles] = {}
    problems: list[str] = []
    for baseline in dict.fromkeys(b for _, b in plan.comparisons):
        base = plan.servers[baseline]
        if base.runtime == "endpoint":
            roles[baseline] = StockRoles(
                baseline=baseline,
                control=None,
                variant=None,
                not_derived=(
                    f"the baseline '{baseline}' is an endpoint byog did not launch, so byog cannot launch its "
                    f"numerics control ({_describe(spec.control)}) or envelope variant "
                    f"({_describe(spec.envelope_variant)}); give it a runtime byog launches"
                ),
            )
            continue
        candidates = {c for c, b in plan.comparisons if b == baseline}
        names: list[str | None] = []
        for what, change, suffix in (
            ("control", spec.control, CONTROL_SUFFIX),
            ("envelope_variant", spec.envelope_variant, VARIANT_SUFFIX),
        ):
            key = _launch_key(derive(base, change))
            found = baseline if key == _launch_key(base) else by_key.get(key)
            problem = None
            if found is None:
                found = baseline + suffix
                if found in plan.servers:
                    problem = f"a server is named '{found}', the name byog gives the numerics {what} of '{baseline}'"
            elif found == baseline:
                problem = (
                    f"numerics.{what} ({_describe(change)}) leaves the baseline '{baseline}' as it is; "
                    "name a change its launch does not already have"
                )
            elif what == "envelope_variant" and found in candidates:
                problem = (
                    f"numerics.envelope_variant ({_describe(change)}) is the candidate '{found}' itself, which would "
                    "be judged against its own noise; name another stock variant (e.g. --max-num-batched-tokens)"
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


def derived_servers(plan: Plan) -> dict[str, ServerConfig]:
    """The derivatives byog launches beside the plan's servers: name -> launch."""
    if plan.numerics is None:
        return {}
    out: dict[str, ServerConfig] = {}
    for role in stock_roles(plan).values():
        base = plan.servers[role.baseline]
        for name, change in ((role.control, plan.numerics.control), (role.variant, plan.numerics.envelope_variant)):
            if name is not None and name not in plan.servers:
                out[name] = derive(base, change)
    return out


def launch_config(plan: Plan, server: str) -> ServerConfig:
    """A plan server's launch, or a derivative's."""
    if server in plan.servers:
        return plan.servers[server]
    derived = derived_servers(plan)
    if server not in derived:
        raise UsageError(f"'{server}' is neither a server of the plan nor a numerics control or variant")
    return derived[server]
