"""phases.json: what a run's wall time went on, phase by phase, as the run went
(``byog.pipeline.activity`` is its one writer; ``byog.analysis.phases`` reads and checks it).

Each phase holds both clocks: ``time.monotonic()`` (which no clock change moves, so lengths and
order come from it) and Unix time (which places the phase in the world and beside the servers'
records). A ``warm-up`` lies inside a ``measure`` of the same server: the batch point's warm-up
waves before its measured ones; every other phase follows the one before it, except the eval phases
of servers the run recorded in ``eval_order`` as evaluated at once (each on GPUs of its own:
``byog.analysis.gpu_sets``). Phases are appended
as they end, so the file is in order of their ends. Deriving the verdict and packing the bundle
are not phases: they happen after the record is final (it is signed with the run).
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import Field

from byog.schemas.base import Strict
from byog.schemas.registry import register

PHASES_SCHEMA_VERSION = 2  # 2: eval_order (1 had none: every eval one server at a time)

PhaseKind = Literal["start", "warm-up", "measure", "swap", "wake-check", "eval", "numerics"]
Instant = tuple[float, float]  # (time.monotonic(), time.time()), read together


def now() -> Instant:
    return time.monotonic(), time.time()


class Phase(Strict):
    kind: PhaseKind
    server: str
    launch: int = Field(default=1, ge=1)
    t0_mono_s: float
    t1_mono_s: float
    t0_unix_s: float
    t1_unix_s: float


class EvalOrder(Strict):
    """How the run ran the evals of servers that launch one after the other: at once (their eval phases
    may overlap) or one server at a time, and why (``byog.analysis.gpu_sets.eval_order``)."""

    servers: list[str] = Field(min_length=2)
    launch: int = Field(default=1, ge=1)
    together: bool
    why: str


class PhaseLog(Strict):
    schema_version: Literal[2] = 2
    clock: Literal["time.monotonic"] = "time.monotonic"
    phases: list[Phase] = Field(default_factory=list)
    eval_order: list[EvalOrder] = Field(default_factory=list)  # each choice as the run (or its resume) made it


register("phases", PhaseLog, version=PHASES_SCHEMA_VERSION, files=("phases.json",))
