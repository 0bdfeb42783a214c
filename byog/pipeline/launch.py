"""``launch_server``: the one way the pipeline starts a server (run, check, serve, numerics, interleave).

A plan server or one byog derives (a numerics control or envelope variant) gets its launch config
(``plans.numerics_roles.launch_config``), optionally transformed (interleave: vLLM's sleep mode), and
starts through the runtime its ``runtime`` names. A derived server vLLM refuses is bad input, said in
vLLM's own words; the run directory keeps what finished, and a rerun resumes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from byog.analysis.server_log import root_cause
from byog.core.errors import ByogError, UsageError
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.pipeline.runtimes import runtime_for
from byog.plans.numerics_roles import launch_config, stock_roles
from byog.schemas.plan import LaunchedConfig, Plan, ServerConfig
from byog.schemas.server import PreparedModel, RunningServer

Transform = Callable[[LaunchedConfig], LaunchedConfig]


def _model_config(model: PreparedModel) -> dict[str, Any] | None:
    """The served model's config.json where this machine can read it (a change such as rope-theta needs it)."""
    path = Path(model.path) / "config.json"
    return read_json(path) if path.is_file() else None


def server_launch(plan: Plan, name: str, model: PreparedModel, transform: Transform | None = None) -> ServerConfig:
    """The config ``launch_server`` starts: the plan's (or derived) launch, through ``transform`` when given."""
    config = launch_config(plan, name, _model_config(model))
    if transform is None:
        return config
    launched = config.launched()
    if launched is None:  # the plan refuses an interleaved endpoint; this says why if one gets here
        raise UsageError(f"server '{name}' is an endpoint: byog does not start it, so cannot change how it starts")
    return transform(launched)


def launch_server(
    plan: Plan, name: str, model: PreparedModel, rd: RunDir, *, transform: Transform | None = None
) -> RunningServer:
    """Start server ``name`` of ``plan`` (or a derived one) healthy, its files under ``rd``."""
    config = server_launch(plan, name, model, transform)
    try:
        return runtime_for(config).launch(name, config, model, rd.server_dir(name))
    except ByogError as err:
        if name in plan.servers or plan.numerics is None:
            raise
        log = rd.server_dir(name) / "server.log"
        reason = root_cause(log.read_text(encoding="utf-8", errors="replace")) if log.is_file() else None
        roles = [
            (w, n)
            for r in stock_roles(plan).values()
            for w, n in (("control", r.control), ("envelope_variant", r.variant))
        ]
        what = next((f"numerics.{w}" for w, n in roles if n == name), "numerics")
        first = str(err).splitlines()[0]
        raise UsageError(f"{what}: the server '{name}' did not start: {reason or first}; no verdict") from None
