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


class NvmlRecord(BaseModel):
    """What NVML said: the GPUs and their driver, or why there are none (``available: false``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    available: bool | None = None
    reason: str | None = None  # when not available
    count: int | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: list[GpuRecord] = []
    topology: list[list[str]] | None = None  # "self", "nvlink" or the PCIe common ancestor, per GPU pair


class CpuRecord(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    model: str | None = None
    logical_cores: int | None = None


class EnvRecord(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    schema_version: int = ENV_SCHEMA_VERSION
    hostname: str | None = None
    os: str | dict[str, Any] | None = None
    python: str | dict[str, Any] | None = None
    cpu: str | CpuRecord | None = None  # a bare string in older fingerprints, with cpu_count beside it
    cpu_count: int | None = None
    memory_total_bytes: int | None = None
    packages: dict[str, str | None] = {}
    gpu: NvmlRecord | None = None
    gpus: list[GpuRecord] = []  # older fingerprints list the GPUs here, not under gpu


register("env", EnvRecord, version=ENV_SCHEMA_VERSION, files=("env.json",))
