"""The numerics differential's and conformance suite's records, and their part of summary.json.

Raw (the source of truth):

- ``NumericsRow``: one parquet row of ``numerics/<server>/<pass>.parquet`` (pass ``alone`` or
  ``together``) — what one server said about one position of one prompt: a teacher-forced
  prompt position or a greedy output position (its token, that token's logprob, the top-k).
- ``NumericsRecord``: ``numerics/<server>/record.json`` — the prompts' token ids, the passes
  run and their wall times, and whose prompts they were (a candidate sends its baseline's).
  Written last: its presence means the server's numerics are complete.
- ``ConformanceRecord``: ``conformance/<server>.json`` — one entry per check with its one-line
  reason and what was sent and seen.

Derived (``summary.json``'s ``numerics``, recomputed by verify): ``NumericsSummary``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field

from byog.schemas import tables
from byog.schemas.base import Derived, Strict
from byog.schemas.plan import NumericsTolerance
from byog.schemas.registry import register

NUMERICS_SCHEMA_VERSION: Final = 1

PassName = Literal["alone", "together"]
Family = Literal["prefill", "decode"]
RuleVerdict = Literal["numerically equivalent", "drifts", "diverges"]
# insensitive: this model on this server cannot show kernel differences (no evidence either way)
NumericsVerdict = Literal["numerically equivalent", "drifts", "diverges", "insensitive"]
ConformanceOutcome = Literal["pass", "fail", "not held"]


class NumericsRow(Strict):
    """One (prompt, position) of one pass; position = the number of tokens before the predicted one."""

    prompt: str
    position: int
    output: bool  # False: a teacher-forced prompt position (prefill); True: a greedy output position (decode)
    token: int
    logprob: float
    top_ids: list[int]  # top-k ids, logprob descending, ties by lower id
    top_logprobs: list[float]


class PromptInfo(Strict):
    prompt: str  # random-<i>, <dataset>-<i>, long-<context>
    kind: Literal["random", "dataset", "long"]
    ids: list[int]  # the prompt's token ids (a candidate sends exactly these)


class PassInfo(Strict):
    name: PassName
    requests: int
    positions: int  # rows written
    wall_s: float


class NumericsRecord(Strict):
    schema_version: Literal[1] = NUMERICS_SCHEMA_VERSION
    server: str
    reference: str  # the server whose prompts these are (itself for a baseline)
    top_k: int
    max_tokens: int
    prompts: list[PromptInfo]
    passes: list[PassInfo]
    plain_decode_wall_s: float | None = None  # the same prompts, greedy, no logprobs, all at once: the cost yardstick


class ConformanceCheck(Strict):
    check: str
    passed: bool
    reason: str  # one line
    detail: dict[str, Any] = Field(default_factory=dict)


class ConformanceRecord(Strict):
    schema_version: Literal[1] = NUMERICS_SCHEMA_VERSION
    server: str
    longest_prompt: int | None  # the prompt length asked for by longest_prompt_accepted (the baseline's longest)
    checks: list[ConformanceCheck]
    wall_s: float


# --- summary.json ----------------------------------------------------------------------------


class NumericsBucket(Derived):
    """One context-position bucket of one comparison (``byog.analysis.numerics.aggregate``)."""

    bucket: str
    start: int
    end: int
    positions: int
    mean_abs_dlogprob: float | None
    max_abs_dlogprob: float | None
    mean_kl: float | None
    max_kl: float | None
    argmax_agreement: float | None
    topk_overlap: float | None


class DivergenceStats(Derived):
    prompts: int
    diverged: int
    earliest: int | None
    median: float | None
    first_divergence: dict[str, int | None] = Field(default_factory=dict)  # prompt -> output index


class BucketDistance(Derived):
    """A candidate bucket against the envelope (``byog.analysis.numerics.distances``)."""

    bucket: str
    start: int
    positions: int
    judged: bool  # covered by the A/A run and no side thinner than min_bucket_positions
    envelope_abs_dlogprob: float
    envelope_kl: float
    distance: float  # max over the drift metrics of candidate / envelope, in envelopes


class FamilyComparison(Derived):
    """One family of positions: ``prefill`` (teacher-forced prompt positions) or ``decode`` (greedy output
    positions before the first divergence)."""

    family: Family
    verdict: RuleVerdict
    reasons: list[str]
    candidate: list[NumericsBucket]
    aa: list[NumericsBucket]
    variant: list[NumericsBucket] = Field(default_factory=list)  # A/A': the envelope variant against the baseline
    distances: list[BucketDistance] = Field(default_factory=list)
    candidate_divergence: DivergenceStats | None = None  # decode only
    aa_divergence: DivergenceStats | None = None
    variant_divergence: DivergenceStats | None = None


class BaselineSensitivity(Derived):
    """Whether a baseline's numerics can show a change (``byog.analysis.numerics`` docstring, Sensitivity)."""

    baseline: str
    sensitive: bool
    reason: str  # one line
    head_ratio: float | None  # median p(top-1)/p(top-k) of the baseline's reference pass
    mean_top1_prob: float | None
    variant: str | None  # the server whose distance set the envelope (None: A/A only)
    control: str | None  # the server the control ran on (None: it did not run)
    control_verdict: RuleVerdict | None = None
    control_distance: float | None = None  # the largest judged bucket distance, in envelopes
    control_families: list[FamilyComparison] = Field(default_factory=list)
    # the control's menu name (None: a custom change), why it was the one, and the entry to try when unseen
    control_change: str | None = None
    control_why: str | None = None
    try_control: str | None = None


class NumericsComparison(Derived):
    candidate: str
    baseline: str
    # the worst family's; "numerically equivalent" of an insensitive baseline reads insensitive (no
    # evidence of no difference), while a difference found stands
    verdict: NumericsVerdict
    rule_verdict: RuleVerdict | None = None  # the worst family's, sensitive or not
    families: list[FamilyComparison]
    max_distance: float | None = None  # the largest judged bucket distance of any family, in envelopes
    # cost: seconds of the numerics passes on each server, and the baseline's plain decode of the same tokens
    candidate_wall_s: float | None = None
    baseline_wall_s: float | None = None
    plain_decode_wall_s: float | None = None


class ConformanceRow(Derived):
    check: str
    outcome: ConformanceOutcome
    baseline_passed: bool | None
    reason: str


class ConformanceResult(Derived):
    check: str
    passed: bool
    reason: str


class ConformanceServer(Derived):
    server: str
    passed: int
    failed: int
    checks: list[ConformanceResult]


class ConformanceComparison(Derived):
    candidate: str
    baseline: str
    conforms: bool
    checks: list[ConformanceRow]


class NumericsSummary(Derived):
    tolerance: NumericsTolerance = Field(default_factory=NumericsTolerance)  # what judged the verdicts (the plan's)
    comparisons: list[NumericsComparison] = Field(default_factory=list)
    sensitivity: list[BaselineSensitivity] = Field(default_factory=list)
    conformance_servers: list[ConformanceServer] = Field(default_factory=list)
    conformance: list[ConformanceComparison] = Field(default_factory=list)


NUMERICS_COLUMNS: tuple[str, ...] = tables.columns(NumericsRow)


def write_numerics_rows(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    tables.write_rows(path, NumericsRow, rows)


register("numerics_row", NumericsRow, version=NUMERICS_SCHEMA_VERSION, files=("numerics/*/*.parquet",), kind="parquet")
register("numerics_record", NumericsRecord, version=NUMERICS_SCHEMA_VERSION, files=("numerics/*/record.json",))
register("conformance_record", ConformanceRecord, version=NUMERICS_SCHEMA_VERSION, files=("conformance/*.json",))
register("numerics_summary", NumericsSummary, version=NUMERICS_SCHEMA_VERSION)
