"""Runtimes by name: each ``byog.runtimes`` module that runs servers registers its runtime class under
the ``runtime`` names it serves (``@register_runtime("docker")``); the config class of each name is
``byog.schemas.runtime_configs``'s (``@register_server_config``). Nothing outside byog/runtimes tests a runtime's
name or class: it asks ``runtime_for(config)`` (behaviour) or the config itself (facts).

A server config with ``nodes > 1`` runs through the runtime registered as ``MULTI_NODE``, whatever its
node runtime. A name nothing registered is an error, never a silent fall-back to ``local``.
"""

from __future__ import annotations

import importlib
import pkgutil
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol, TypeVar

from byog.core.errors import UsageError
from byog.schemas.runtime_configs import ServerConfig
from byog.schemas.server import PreparedModel, RunningServer

MULTI_NODE = "multi-node"
PORT = "PORT"  # the planned launch's port: a free one is chosen at launch


@dataclass(frozen=True)
class PlannedLaunch:
    """What launching a server would run, as far as the plan says (``byog plan``, ``byog reproduce --dry-run``)."""

    argv: list[str] | None  # None: nothing starts here (an endpoint; a multi-node server: see its per-node launch)
    env: dict[str, str]  # on top of the process's own environment, secrets redacted
    command: str  # one line for a person

    @staticmethod
    def of_argv(argv: list[str], env: dict[str, str]) -> PlannedLaunch:
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
        return PlannedLaunch(argv, env, f"{shown} {shlex.join(argv)}".strip())


class Runtime(Protocol):
    def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> RunningServer:
        """Start the server, wait for /health, write server.json; raise ByogError with the log tail on failure."""
        ...

    def planned(self, name: str, config: ServerConfig, model: PreparedModel, *, cpu_build: bool) -> PlannedLaunch:
        """The launch ``launch`` would make, without starting anything (ports: ``PORT``)."""
        ...


R = TypeVar("R", bound=Callable[[], Runtime])
_RUNTIMES: dict[str, Callable[[], Runtime]] = {}


def register_runtime(*names: str) -> Callable[[R], R]:
    """Register a runtime class (called with no arguments) for these ``runtime`` names (or ``MULTI_NODE``)."""

    def add(factory: R) -> R:
        for name in names:
            if name in _RUNTIMES and _RUNTIMES[name] is not factory:
                raise ValueError(f"runtime '{name}' is registered twice")
            _RUNTIMES[name] = factory
        return factory

    return add


@cache
def _load_builtin() -> None:
    """Import every module of byog.runtimes once, so each registers its runtime."""
    import byog.runtimes

    for info in pkgutil.iter_modules(byog.runtimes.__path__):
        importlib.import_module(f"byog.runtimes.{info.name}")


def runtime_for(config: ServerConfig) -> Runtime:
    """The runtime that starts ``config``: its ``runtime``'s, or the multi-node one for ``nodes > 1``."""
    _load_builtin()
    name = MULTI_NODE if config.multi_node else config.runtime
    if name not in _RUNTIMES:
        raise UsageError(f"no runtime '{name}' is registered in byog.runtimes (known: {', '.join(sorted(_RUNTIMES))})")
    return _RUNTIMES[name]()


def port_placeholder(argv: list[str]) -> list[str]:
    """``argv`` with its ``--port`` value shown as ``PORT``."""
    shown = list(argv)
    if "--port" in shown:
        shown[shown.index("--port") + 1] = PORT
    return shown
