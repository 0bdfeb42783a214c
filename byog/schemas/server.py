"""servers/<name>/server.json: what a runtime launched, as it launched it.

Written by the runtimes in ``byog.images`` (argv, image id and RepoDigests, ``/version``,
``/v1/models``). Unknown keys are kept so a runtime can record more without a schema bump.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from byog.schemas.registry import register

SERVER_SCHEMA_VERSION = 1


class ServerRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = SERVER_SCHEMA_VERSION
    name: str
    runtime: str | None = None
    argv: list[str] = []
    image: str | None = None
    image_id: str | None = None
    repo_digests: list[str] = []
    version: str | dict[str, Any] | None = None  # the server's /version
    models: Any = None  # the server's /v1/models


register("server", ServerRecord, version=SERVER_SCHEMA_VERSION, files=("servers/*/server.json",))
