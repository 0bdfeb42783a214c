"""What every runtime (local process, docker, existing endpoint) provides.

A runtime starts one server config and hands back a ``RunningServer``: an ``Endpoint`` to send
requests to, liveness, the log tail for error messages, ``restart`` (a sweep restarts a server
that died mid-point once) and ``stop``. Every runtime writes ``servers/<name>/server.json``
(argv, image id and digests, /version, /v1/models) and streams the server log beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from byog.plans.model import ServerConfig


@dataclass(frozen=True)
class PreparedModel:
    """A model ready to serve: a local directory (or hub id) and the name clients use for it."""

    path: str
    served_name: str
    tokenizer: str  # local path or hub id; used by the client, lm-eval and `vllm bench serve`
    max_model_len: int | None = None


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible vLLM server that answers /health."""

    base_url: str  # e.g. http://127.0.0.1:8123 (no trailing slash, no /v1)
    model: str  # the served model name to put in requests
    tokenizer: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    tensor_parallel_size: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


class RunningServer(Protocol):
    name: str
    endpoint: Endpoint

    def alive(self) -> bool: ...

    def log_tail(self, lines: int = 30) -> str: ...

    def restart(self) -> None: ...

    def stop(self) -> None: ...


class Runtime(Protocol):
    def launch(self, name: str, config: ServerConfig, model: PreparedModel, server_dir: Path) -> RunningServer:
        """Start the server, wait for /health, write server.json; raise ByogError with the log tail on failure."""
        ...
