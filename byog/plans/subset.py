"""A plan cut down to some of its points and servers, with a maintainer's overrides: the plan a
reproduction runs (``byog reproduce``), recorded as its plan.yaml so verify re-derives it.

``restrict_plan`` keeps the named servers, each workload only at the coordinates (load, ISL,
OSL) of the chosen points, and each eval on at most ``eval_items`` items in one pass. The point
ids stay those of the original (an id names the workload and its coordinates), so a reproduced
point pairs with the original's.

``apply_overrides`` makes the cut plan runnable on the maintainer's machine, and here the bundle
is data, never a command: everything about *where and how* a server runs comes from the
maintainer (the command line, or ``[reproduce]`` in byog's config file), never from the bundle:
runtime, image, hosts, ssh options, node python, environment, endpoint URL, model path. The
bundle keeps what is measured: its workloads, evals, numerics and seeds, each server's
parallel layout, and its ``vllm serve`` flags as far as ``byog.plans.server_flags`` lets them
through. Defaults run nothing remote: a server runs on the local runtime, or in docker only with
an image the maintainer names (``--image``) or one pinned by a digest the maintainer allows
(``allowed_image_digests``). A server the bundle runs over ssh, or in an image not allowed, is
refused in one sentence, as is a flag that runs code or reads paths.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from byog.core.errors import UsageError
from byog.core.settings import config_file, config_setting
from byog.plans.expand import expand_plan
from byog.plans.server_flags import vet_server
from byog.schemas.plan import AgenticWorkload, Plan, ServerConfig

_LOADS = {"batch": "batch_sizes", "concurrency": "concurrencies", "rate": "rates"}


def restrict_plan(plan: Plan, point_ids: Sequence[str], servers: Sequence[str], eval_items: int) -> Plan:
    """The plan with only ``servers``, the workloads' values of ``point_ids``, and evals of ``eval_items`` items."""
    unknown = sorted(set(servers) - set(plan.servers))
    if unknown:
        raise UsageError(f"no server {', '.join(unknown)} in plan '{plan.name}' (it has {', '.join(plan.servers)})")
    points = {p.point_id: p for p in expand_plan(plan)}
    missing = sorted(set(point_ids) - set(points))
    if missing:
        raise UsageError(f"no point {', '.join(missing)} in plan '{plan.name}' (it has {', '.join(points)})")
    kept = [s for s in plan.servers if s in servers]
    chosen = [points[pid] for pid in point_ids]
    workloads: list[Any] = []
    for w in plan.workloads:
        if isinstance(w, AgenticWorkload):
            continue
        name = w.name or w.kind
        mine = [p for p in chosen if p.workload == name]
        on = [s for s in plan.servers_for(w) if s in kept]
        if not mine or not on:
            continue
        loads_by_kind: dict[str, list[Any]] = {
            "batch": [p.batch_size for p in mine],
            "concurrency": [p.concurrency for p in mine],
            "rate": [p.rate for p in mine],
        }
        loads = loads_by_kind[w.kind]
        update: dict[str, Any] = {
            "name": name,
            "servers": on,
            "isl": sorted({p.isl for p in mine}),
            "osl": sorted({p.osl for p in mine}),
            _LOADS[w.kind]: sorted(set(loads)),
        }
        workloads.append(w.model_copy(update=update))
    evals = []
    if eval_items > 0:
        for spec in plan.evals:
            on = [s for s in plan.servers_for(spec) if s in kept]
            if on:
                limit = eval_items if spec.limit is None else min(spec.limit, eval_items)
                evals.append(spec.model_copy(update={"servers": on, "limit": limit, "passes": 1}))
    baseline = plan.baseline if plan.baseline in kept else kept[0]
    pairs = None
    if plan.pairs is not None or plan.baseline not in kept:
        pairs = [pair for pair in plan.pairs or [] if pair.candidate in kept and pair.baseline in kept]
    cut = plan.model_copy(
        update={
            "description": f"{plan.description} [reproduction: {', '.join(point_ids) or 'evals only'}]".strip(),
            "servers": {s: plan.servers[s] for s in kept},
            "baseline": baseline,
            "pairs": pairs,
            "workloads": workloads,
            "evals": evals,
        }
    )
    return Plan.model_validate(cut.model_dump(mode="json"))  # model_copy skips validation


# What of a bundle's server config describes the server under test, and is kept; every other
# field (runtime, image, gpus, url, env, hosts, ssh_options, node_python, ray_args) is where and
# how it runs on someone's machine, and comes from the maintainer.
MEASURED_FIELDS = (
    "args",
    "tensor_parallel_size",
    "data_parallel_size",
    "decode_context_parallel_size",
    "additional_config",
    "speculative_config",
    "startup_timeout_s",
    "nodes",
    "launcher",
    "gpus_per_node",
)
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
    node_python: str | None = None
    env: list[str] = field(default_factory=list)  # "[SERVER=]KEY=VALUE"
    allow_flags: list[str] = field(default_factory=list)  # flags (or config keys) the bundle may pass after all
    allowed_image_digests: list[str] = field(default_factory=list)  # "sha256:...": the bundle's images that may run

    @classmethod
    def from_config(cls, **given: Any) -> Overrides:
        """The command line's values over ``[reproduce]`` in byog's config file (``image``,
        ``model_path``, ``ssh_options``, ``node_python``, ``env``, ``allow_flags``,
        ``allowed_image_digests``); list settings are added to."""
        opts = cls(**given)
        image = config_setting(CONFIG_SECTION, "image")
        if image and not opts.images:
            opts.images = [image]
        opts.model_path = opts.model_path or config_setting(CONFIG_SECTION, "model_path") or None
        opts.node_python = opts.node_python or config_setting(CONFIG_SECTION, "node_python") or None
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
        out += [f"--node-python {self.node_python}"] if self.node_python else []
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


def _digest(image: str | None) -> str | None:
    return image.rsplit("@", 1)[1] if image and "@sha256:" in image else None


def _runtime_fields(
    name: str, bundle: ServerConfig, overrides: Overrides, chosen: dict[str, list[str]]
) -> dict[str, Any]:
    """Runtime, image, url and hosts for one server: the maintainer's, or the safe default."""
    if chosen["url"]:
        return {"runtime": "endpoint", "url": chosen["url"][-1]}
    image = chosen["image"][-1] if chosen["image"] else None
    if chosen["hosts"]:
        return {"runtime": "docker" if image else "ssh", "image": image, "hosts": chosen["hosts"]}
    if image:
        return {"runtime": "docker", "image": image}
    if bundle.runtime == "ssh" or bundle.hosts:
        shown = ", ".join(bundle.hosts) or "no hosts"
        options = f" with ssh options {' '.join(bundle.ssh_options)}" if bundle.ssh_options else ""
        raise UsageError(
            f"server '{name}' of the bundle runs on other hosts ({shown}){options}; byog reproduce runs nothing "
            f"remote that you did not name: pass --host {name}=HOST for each of its {bundle.nodes} nodes, or leave it "
            "out with --server"
        )
    if bundle.runtime == "docker":
        digest = _digest(bundle.image)
        if digest is None or digest not in overrides.allowed_image_digests:
            raise UsageError(
                f"server '{name}' of the bundle runs image '{bundle.image}', which is not pinned by a digest you "
                f"allow; pass --image {name}=IMAGE, or add its digest to --policy's allowed_image_digests "
                f"(or allowed_image_digests under [{CONFIG_SECTION}] in {config_file()})"
            )
        return {"runtime": "docker", "image": bundle.image}
    return {"runtime": "local"}


def apply_overrides(plan: Plan, overrides: Overrides) -> Plan:
    """The plan as this machine runs it: the bundle's measured settings (flags vetted), the maintainer's runtime."""
    names = list(plan.servers)
    chosen: dict[str, dict[str, list[str]]] = {
        "image": _per_server(overrides.images, names, "--image"),
        "hosts": _per_server(overrides.hosts, names, "--host"),
        "args": _per_server(overrides.server_args, names, "--server-arg"),
        "url": {name: [] for name in names},
    }
    for value in overrides.endpoints:
        targets, url = _split(value, names, "--endpoint", required=True)
        for name in targets:
            chosen["url"][name].append(url)
    env = _env(overrides.env, names)
    servers: dict[str, Any] = {}
    for name, bundle in plan.servers.items():
        vet_server(name, bundle, overrides.allow_flags)
        mine = {key: chosen[key][name] for key in chosen}
        config: dict[str, Any] = bundle.model_dump(mode="json", include=set(MEASURED_FIELDS))
        config["args"] = [*config["args"], *mine["args"]]
        config.update(_runtime_fields(name, bundle, overrides, mine))
        config["env"] = env[name]
        if config["runtime"] == "ssh":
            config["ssh_options"] = list(overrides.ssh_options)
        if config["runtime"] in ("local", "ssh") and overrides.node_python:
            config["node_python"] = overrides.node_python
        if config["runtime"] == "endpoint":
            config = {k: v for k, v in config.items() if k not in ("nodes", "launcher", "gpus_per_node")}
        try:
            servers[name] = ServerConfig.model_validate(config).model_dump(mode="json")
        except ValueError as err:
            raise UsageError(f"server '{name}' as you run it: {err}") from None
    data = plan.model_dump(mode="json")
    data["servers"] = servers
    model = data["model"]
    model["tokenizer"] = None  # a path or hub id the bundle names: the model's own tokenizer instead
    launched = [name for name, config in servers.items() if config["runtime"] != "endpoint"]
    if overrides.model_path:
        model["path"] = overrides.model_path
    elif launched and not str(model["path"]).startswith("builtin:"):
        raise UsageError(
            f"the bundle serves model '{model['path']}', and byog reproduce loads only a model you name: pass "
            f"--model-path PATH (or model_path under [{CONFIG_SECTION}] in {config_file()})"
        )
    return Plan.model_validate(data)
