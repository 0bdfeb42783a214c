"""The `endpoint` runtime: a server someone already runs. Nothing is launched or stopped.

The record still says what was measured: the URL, /version and /v1/models as the server
answers them. ``restart`` cannot bring a dead endpoint back, so it says so.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from byog.core.errors import ByogError, EnvironmentProblem
from byog.runtimes.record import (
    parallel_sizes,
    probe_server,
    resolved_config,
    served_max_model_len,
    utc_now,
    write_server_record,
)
from byog.runtimes.registry import PlannedLaunch, register_runtime
from byog.schemas.plan import EndpointConfig, ServerConfig
from byog.schemas.server import Endpoint, PreparedModel, ServerGpus, ServerRecord


class EndpointServer:
    def __init__(self, name: str, config: EndpointConfig, model: PreparedModel, server_dir: Path) -> None:
        self.name = name
        base_url = config.url.rstrip("/").removesuffix("/v1")
        try:
            healthy = httpx.get(f"{base_url}/health", timeout=10.0).status_code == 200
        except httpx.HTTPError as err:
            raise EnvironmentProblem(f"endpoint '{name}' at {base_url} does not answer: {err}") from None
        if not healthy:
            raise EnvironmentProblem(f"endpoint '{name}' at {base_url} answers /health with an error")
        probe = probe_server(base_url)
        served = [card.get("id") for card in (probe.get("models") or {}).get("data", [])]
        model_name = model.served_name if model.served_name in served or not served else served[0]
        # What the server resolved when it says (vLLM dev mode); its TP size, else the plan's.
        resolved = resolved_config(base_url)
        parallel = parallel_sizes(resolved)
        tp = (parallel or {}).get("tensor_parallel_size") or config.tensor_parallel_size
        self.endpoint = Endpoint(
            base_url=base_url,
            model=model_name,
            tokenizer=model.tokenizer,
            # only what the server says: the plan's model.max_model_len is a statement about a server byog
            # did not launch, and the evals refuse a server whose context is unknown rather than trust it
            max_model_len=served_max_model_len(probe.get("models")),
            tensor_parallel_size=tp,
        )
        write_server_record(
            server_dir / "server.json",
            ServerRecord(
                name=name,
                runtime="endpoint",
                argv=None,
                base_url=base_url,
                model=model_name,
                model_path=model.path,
                tensor_parallel_size=tp,
                tensor_parallel_size_from="server" if parallel and parallel.get("tensor_parallel_size") else "plan",
                parallel_config=parallel,
                max_model_len=self.endpoint.max_model_len,
                starts=[{"started_at": utc_now(), "ready_after_s": 0.0, "pid": None}],
                resolved=resolved,
                hardware=ServerGpus(unknown="an endpoint: byog cannot see its GPUs"),
                **probe,
            ),
        )

    def alive(self) -> bool:
        try:
            return httpx.get(f"{self.endpoint.base_url}/health", timeout=5.0).status_code == 200
        except httpx.HTTPError:
            return False

    def log_tail(self, lines: int = 30) -> str:  # noqa: ARG002 (RunningServer.log_tail)
        return "(an endpoint runtime has no server log: byog did not launch it)"

    def restart(self) -> None:
        raise ByogError(f"endpoint '{self.name}' went away and byog cannot restart a server it did not launch")

    def stop(self) -> None:
        """Not ours to stop."""


@register_runtime("endpoint")
class EndpointRuntime:
    def planned(self, name: str, config: ServerConfig, model: PreparedModel, *, cpu_build: bool) -> PlannedLaunch:
        del model, cpu_build
        if not isinstance(config, EndpointConfig):
            raise ByogError(f"server '{name}' asks for the '{config.runtime}' runtime, not 'endpoint'")
        return PlannedLaunch(None, {}, f"(already running at {config.url}; byog launches nothing)")

    def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> EndpointServer:
        if not isinstance(config, EndpointConfig):
            raise ByogError(f"server '{name}' asks for the '{config.runtime}' runtime, not 'endpoint'")
        return EndpointServer(name, config, model, server_dir)
