"""calibration.json: the between-launch variance an A/A calibration measured (``byog calibrate``),
and the fingerprint of what it measured (byog.analysis.calibration)."""

from __future__ import annotations

from pydantic import Field

from byog.schemas.base import Strict
from byog.schemas.registry import register

CALIBRATION_SCHEMA_VERSION = 1


class Fingerprint(Strict):
    """sha256 digests of canonical JSON: the hardware, the software and each server's configuration."""

    hardware: str
    software: str
    servers: dict[str, str]


class LaunchSpread(Strict):
    """The sample variance of ln stat(one launch) over one server's launches at one point."""

    server: str
    point_id: str
    metric: str
    var: float = Field(ge=0)
    df: int = Field(ge=1)  # launches - 1
    waves: int = Field(ge=1)  # units per launch it was measured with


class Calibration(Strict):
    schema_version: int = CALIBRATION_SCHEMA_VERSION
    created_at: str  # ISO 8601, UTC: when the calibration run was derived
    plan_name: str
    launches: int = Field(ge=3)  # per server
    fingerprint: Fingerprint
    spreads: list[LaunchSpread]


register("calibration", Calibration, version=CALIBRATION_SCHEMA_VERSION, files=("calibration.json",))
