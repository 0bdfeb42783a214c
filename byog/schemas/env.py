"""env.json: the environment fingerprint written by ``byog.images.fingerprint``.

Machines differ in what they can report (NVML only where there are NVIDIA GPUs), so only the
shape of what is present is checked and unknown keys are kept: a newer fingerprint with more
fields still validates, a field of the wrong type does not.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from byog.schemas.registry import register

ENV_SCHEMA_VERSION = 1


class GpuRecord(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    index: int | None = None
    name: str | None = None
    memory_total_bytes: int | None = None
    driver_version: str | None = None


class EnvRecord(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    schema_version: int = ENV_SCHEMA_VERSION
    hostname: str | None = None
    os: str | dict[str, Any] | None = None
    python: str | dict[str, Any] | None = None
    cpu: str | dict[str, Any] | None = None
    memory_total_bytes: int | None = None
    packages: dict[str, str | None] = {}
    gpu: dict[str, Any] | None = None  # NVML: {"available", "count", "driver_version", "gpus": [...], "topology"}
    gpus: list[GpuRecord] = []


register("env", EnvRecord, version=ENV_SCHEMA_VERSION, files=("env.json",))
