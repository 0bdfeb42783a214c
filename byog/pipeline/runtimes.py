"""Which runtime starts a server config (local process, docker container, existing endpoint, or a
multi-node cluster of local, docker or ssh nodes)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from byog.runtimes.cluster import ClusterRuntime
from byog.runtimes.docker import DockerRuntime
from byog.runtimes.endpoint import EndpointRuntime
from byog.runtimes.local import LocalRuntime
from byog.schemas.plan import DockerConfig, EndpointConfig, ServerConfig, SlurmConfig, SshConfig
from byog.schemas.server import PreparedModel, RunningServer


class Runtime(Protocol):
    def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> RunningServer:
        """Start the server, wait for /health, write server.json; raise ByogError with the log tail on failure."""
        ...


def runtime_for(config: ServerConfig) -> Runtime:
    if isinstance(config, EndpointConfig):
        return EndpointRuntime()
    if config.multi_node or isinstance(config, SshConfig | SlurmConfig):
        return ClusterRuntime()
    return DockerRuntime() if isinstance(config, DockerConfig) else LocalRuntime()
