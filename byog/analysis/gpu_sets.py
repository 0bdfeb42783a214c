"""Whether two servers of a plan can run their evals at once: each up on GPUs of its own.

byog only says "at once" where the plan declares each server's GPUs and they cannot be the same card:
- each server is one node byog starts on this host (an endpoint, a multi-node server, or one on other
  hosts or Slurm nodes runs on GPUs byog does not assign, so they are unknown);
- each names its GPUs by index: a Docker ``gpus: [ids]`` list (NVML's PCI bus order) or the digits of
  ``CUDA_VISIBLE_DEVICES`` in its env (CUDA's order, which ``CUDA_DEVICE_ORDER`` sets: two servers are
  compared only when they count in the same order, so "0" names the same card for both);
- each set holds the server's TP x PP x DP, and where NVML saw this host's GPUs (env.json), every
  index is a card it saw;
- the two sets share no index.
Anything else is evaluated one server at a time, with why. ``eval_order`` pairs the servers whose evals
run, in the order they launch; the run (``byog.pipeline.evals_at_once``), ``byog plan``'s eval wall
and verify's phase check read the same answer. Once both are up, what NVML reported at each start
(server.json ``hardware``: the cards' UUIDs) has the last word: two servers that saw one card are
evaluated one at a time after all (``shared_cards``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from byog.schemas.plan import Plan, ServerConfig

NOT_KNOWN = "the servers' GPUs are not known to be disjoint"


@dataclass(frozen=True)
class GpuSet:
    """The cards a server is declared to run on, in one numbering (``order``)."""

    ids: frozenset[int]
    order: str  # which numbering the ids are in: two sets are comparable only in the same one
    said: str  # as the plan declares it, e.g. "CUDA_VISIBLE_DEVICES=0,1"


@dataclass(frozen=True)
class Choice:
    """One pair of servers that launch one after the other: their evals at once or not, and why."""

    servers: tuple[str, str]
    together: bool
    why: str


def declared_gpus(name: str, config: ServerConfig) -> GpuSet | str:
    """The server's declared GPUs, or why byog does not know them."""
    launched = config.launched()
    if launched is None:
        return f"'{name}' is an endpoint byog does not start"
    if launched.multi_node:
        return f"'{name}' spans {launched.nodes} nodes"
    elsewhere = launched.elsewhere()
    if elsewhere is not None:
        return f"'{name}': {elsewhere}"
    listed = getattr(launched, "gpus", None)
    if isinstance(listed, list):
        return GpuSet(frozenset(listed), "docker --gpus (NVML order)", f"gpus: {listed}")
    visible = launched.env.get("CUDA_VISIBLE_DEVICES")
    ids = launched.gpu_indices()
    if ids is None:
        why = "no CUDA_VISIBLE_DEVICES in its env" if visible is None else f"CUDA_VISIBLE_DEVICES={visible!r}"
        return f"'{name}' names no GPUs by index ({why})"
    order = launched.env.get("CUDA_DEVICE_ORDER", "unset")
    numbering = f"{launched.runtime} runtime, CUDA_DEVICE_ORDER {order}"
    return GpuSet(frozenset(ids), numbering, f"CUDA_VISIBLE_DEVICES={visible}")


def _host_cards(gpu: dict[str, Any] | None) -> int | None:
    """How many GPUs NVML saw on this host (env.json's ``gpu``); None where it saw none or is not asked."""
    if not isinstance(gpu, dict) or not gpu.get("available"):
        return None
    cards = gpu.get("gpus")
    return len(cards) if isinstance(cards, list) else None


def _fits(name: str, config: ServerConfig, gpus: GpuSet, cards: int | None) -> str | None:
    """Why the declared set cannot hold the server, or None."""
    need = config.world_size()
    if len(gpus.ids) < need:
        return f"'{name}' needs {need} GPUs (TP x PP x DP) but {gpus.said} names {len(gpus.ids)}"
    if cards is not None and max(gpus.ids) >= cards:
        return f"'{name}' names GPU {max(gpus.ids)} ({gpus.said}) but NVML sees {cards} on this host"
    return None


def at_once(plan: Plan, a: str, b: str, gpu: dict[str, Any] | None) -> Choice:
    """Whether servers ``a`` and ``b`` can be up and run their evals at once; ``gpu``: NVML's view of
    this host (env.json's ``gpu``; None: not asked, the declarations are taken as written)."""
    sets: dict[str, GpuSet] = {}
    for name in (a, b):
        found = declared_gpus(name, plan.servers[name])
        if isinstance(found, str):
            return Choice((a, b), False, f"{NOT_KNOWN}: {found}")
        sets[name] = found
    cards = _host_cards(gpu)
    for name in (a, b):
        misfit = _fits(name, plan.servers[name], sets[name], cards)
        if misfit is not None:
            return Choice((a, b), False, f"{NOT_KNOWN}: {misfit}")
    if sets[a].order != sets[b].order:
        return Choice((a, b), False, f"{NOT_KNOWN}: '{a}' counts GPUs by {sets[a].order}, '{b}' by {sets[b].order}")
    shared = sorted(sets[a].ids & sets[b].ids)
    if shared:
        listed = ", ".join(str(i) for i in shared)
        return Choice((a, b), False, f"'{a}' and '{b}' share GPU {listed} ({sets[a].said}; {sets[b].said})")
    return Choice((a, b), True, f"each on GPUs of its own: '{a}' {sets[a].said}, '{b}' {sets[b].said}")


def eval_order(plan: Plan, order: list[str], gpu: dict[str, Any] | None) -> list[Choice]:
    """For servers with evals in the order they launch: each next two a pair, at once where their GPUs
    allow (then the pair after them), else the first alone and the second tried with the one after it."""
    choices: list[Choice] = []
    i = 0
    while i + 1 < len(order):
        choice = at_once(plan, order[i], order[i + 1], gpu)
        choices.append(choice)
        i += 2 if choice.together else 1
    return choices


def cards_seen(record: object) -> set[str]:
    """The UUIDs of the GPUs a server saw at its start (a server.json document; read as hostile input)."""
    hardware = record.get("hardware") if isinstance(record, dict) else None
    gpus = hardware.get("gpus") if isinstance(hardware, dict) else None
    return {g["uuid"] for g in gpus or [] if isinstance(g, dict) and isinstance(g.get("uuid"), str)}


def shared_cards(seen: Mapping[str, Collection[str]], a: str, b: str) -> str | None:
    """Why ``a`` and ``b`` did not run on GPUs of their own by what NVML reported at their starts, or
    None (no card in common, or none reported)."""
    both = sorted(set(seen.get(a, ())) & set(seen.get(b, ())))
    if not both:
        return None
    return f"'{a}' and '{b}' both saw GPU {', '.join(both)} at their start (server.json hardware)"
