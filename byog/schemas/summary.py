"""summary.json: derived by ``byog.bundles.summary.derive_summary``; verify recomputes it.

The top level is fixed here; the rows inside ``bench`` and ``evals`` are described by the bench
and evals schema modules (when a row model is registered as ``bench_comparison`` etc. it is
used; until then a row is any JSON object).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from byog.schemas.registry import register

SUMMARY_SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SummaryPlan(_Strict):
    name: str
    baseline: str
    candidates: list[str]


class SummaryBench(BaseModel):
    model_config = ConfigDict(extra="allow")

    points: list[dict[str, Any]] = []
    comparisons: list[dict[str, Any]] = []


class SummaryEvals(BaseModel):
    model_config = ConfigDict(extra="allow")

    scores: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []


class Summary(_Strict):
    schema_version: int
    plan: SummaryPlan
    bench: SummaryBench
    evals: SummaryEvals


register("summary", Summary, version=SUMMARY_SCHEMA_VERSION, files=("summary.json",))
