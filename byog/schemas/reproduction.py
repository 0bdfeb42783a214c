"""reproduction.json: a maintainer re-ran part of a bundle on their own hardware; what was compared.

``byog reproduce BUNDLE`` writes it into a reproduction run directory, beside that run's own raw
records (``bench/``, ``evals/``), ``env.json`` (where), ``servers/*/server.json`` (what ran) and,
once packed and signed, ``signer.json`` (who): the reproduction is itself a bundle, so
``byog verify`` recomputes its numbers like any other, and this record says how they compare
with the original's. The rule behind ``outcome`` is ``byog.analysis.reproduction``.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from byog.schemas.base import Derived, Strict
from byog.schemas.numerics import NumericsVerdict
from byog.schemas.registry import register

REPRODUCTION_SCHEMA_VERSION: Final = 1
REPRODUCTION_NAME = "reproduction.json"

Outcome = Literal["reproduced", "not reproduced", "not compared"]


class OriginalBundle(Strict):
    """Which bundle was reproduced: its bytes, its signed manifest, who signed it."""

    bundle_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    manifest_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")  # also the seed of the point sample
    plan_name: str
    plan_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    byog_version: str
    signer_fingerprint: str | None = None  # SHA256:... from the bundle's verified signature
    signer_principal: str | None = None  # who, per the allowed_signers reproduce was given


class ReproductionRule(Strict):
    """The parameters of the comparison (``byog.analysis.reproduction`` documents the rule)."""

    run_noise: float = Field(ge=0)  # between-run noise allowance of one value, relative (0.05 = 5%)
    ci_level: float
    metrics: list[str]
    eval_min_agreement: float = Field(ge=0, le=1)
    checks_compared: int | None = Field(default=None, ge=0)  # m: the family the CI level holds for
    family_z_scale: float | None = Field(default=None, ge=1)  # z(1 - alpha/2m) / z(1 - alpha/2), on every sampling term


class MetricCheck(Derived):
    """One number of the original held against the same number reproduced.

    ``kind: value``: one server's metric at one point. ``kind: ratio``: candidate / baseline at one
    point (``server`` is the candidate). Deviation and tolerance are in natural-log units.
    """

    kind: Literal["value", "ratio"]
    server: str
    baseline: str | None = None
    point_id: str
    metric: str
    original: float | None
    original_low: float | None = None
    original_high: float | None = None
    reproduced: float | None
    reproduced_low: float | None = None
    reproduced_high: float | None = None
    deviation: float | None = None  # ln(reproduced / original)
    tolerance: float | None = None  # the largest |deviation| that counts as reproduced
    outcome: Outcome
    note: str = ""


class PointReproduction(Derived):
    point_id: str
    load: str  # "B=1", "C=8", "2 req/s"
    servers: list[str]
    outcome: Outcome
    checks: list[MetricCheck]


class EvalReproduction(Derived):
    """A few eval items re-run greedily: do the extracted answers agree with the original's?"""

    server: str
    task: str
    items: int  # compared (present in both, same item hash)
    agreed: int
    agreement: float | None  # agreed / items
    min_agreement: float
    differing: list[str] = Field(default_factory=list)  # item ids whose answers differ
    outcome: Outcome
    note: str = ""


class NumericsReproduction(Derived):
    """One numerics comparison re-run: is the candidate's verdict against its baseline the original's?"""

    candidate: str
    baseline: str
    original: NumericsVerdict | None  # the verdict in the original's summary; None: it has none for this pair
    reproduced: NumericsVerdict
    outcome: Outcome
    note: str = ""


class Hardware(Strict):
    original: str
    reproduced: str
    same: bool  # same accelerator model and count (or CPU model when neither has a GPU)


class ReproductionRecord(Strict):
    schema_version: Literal[1] = REPRODUCTION_SCHEMA_VERSION
    original: OriginalBundle
    selection: Literal["sampled", "named"]
    points_requested: list[str]
    overrides: list[str] = Field(default_factory=list)  # what the maintainer changed, as given on the command line
    hardware: Hardware
    started_at: str  # UTC, ISO 8601
    finished_at: str
    rule: ReproductionRule
    points: list[PointReproduction]
    evals: list[EvalReproduction] = Field(default_factory=list)
    numerics: list[NumericsReproduction] = Field(default_factory=list)
    outcome: Outcome  # reproduced only when every compared point, eval and numerics verdict was


register("reproduction", ReproductionRecord, version=REPRODUCTION_SCHEMA_VERSION, files=(REPRODUCTION_NAME,))
