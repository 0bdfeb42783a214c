"""Pydantic models of the eval files in a run directory: items.parquet rows and results.json.

``evals/<server>/<task>/items.parquet``: one row per (item, pass) — raw, the source of truth.
``evals/<server>/<task>/results.json``: what was run (task definition, data, sampling, endpoint)
and the score it gave. Neither holds question or answer text of a gated dataset: items keep an
id, the sha256 of the item's canonical text, the extracted answer and the score. Since item schema 2
a row whose answer the task's extraction could not read (``[invalid]``) of a task that is not gated
also keeps what the server returned, clipped (``clip``), so a reader can see why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field

from byog.schemas import tables
from byog.schemas.base import Derived, Strict
from byog.schemas.registry import register

EVAL_RESULTS_SCHEMA_VERSION: Final = 1
# items.parquet records its version in the parquet metadata; a file without one has layout 1
# (no raw output columns: ``EvalItemRowV1``); layout 2 has no ``num_concurrent`` (``EvalItemRowV2``)
EVAL_ITEM_SCHEMA_VERSION: Final = 3

INVALID_ANSWER: Final = "[invalid]"  # lm-eval's fallback when a task's answer filter finds nothing
RAW_OUTPUT_CHARS: Final = 4000  # the most characters of a response items.parquet keeps (``clip``)

# "degenerate": a comparison the paired test cannot judge (byog.analysis.degenerate), never a pass
Verdict = Literal["equivalent", "different", "inconclusive", "degenerate"]
# how the paired verdict was judged: Tango's score statistic for binary items, else the paired t
PairedMethod = Literal["paired-t", "tango-score"]
DegenerateReason = Literal["floor", "ceiling", "no_discordant", "below_reference"]


class EvalItemRowV1(Strict):
    """One (item, pass) of an items.parquet of layout 1 (written before files recorded a version)."""

    item_id: str  # stable id: the dataset's own id where it has one, else "<split>:<row index>"
    item_sha256: str  # sha256 of the item's canonical JSON (the dataset row, keys sorted)
    pass_index: int = Field(ge=0, json_schema_extra={"arrow": "int32"})  # k in 0..K-1; pass k used seed plan.seeds[k]
    seed: int
    extracted_answer: str | None  # what the answer extraction took from the response
    target: str | None  # the gold answer in short form (number, letter); None where it is long text
    score: float = Field(ge=0, le=1)  # 0..1 (exact match, or the MRCR ratio)
    n_output_tokens: int | None = None  # from the server's usage where the runner sees it
    bin: str | None = None  # MRCR: the token-count bin of the row


class EvalItemRowV2(EvalItemRowV1):
    """One (item, pass) of an items.parquet of layout 2."""

    # What the server returned, ``clip``ped to RAW_OUTPUT_CHARS: only where the extracted answer is
    # INVALID_ANSWER and the task is not gated; None otherwise
    raw_output: str | None = None
    raw_output_chars: int | None = None  # the whole response's length in characters, where raw_output is kept


class EvalItemRow(EvalItemRowV2):
    """One (item, pass): one parquet row of items.parquet (schema 3)."""

    # the requests the runner kept in flight while this item's request ran (lm-eval's num_concurrent,
    # MRCR's workers): an operating point's stratum (byog.analysis.strata) or the eval's one concurrency.
    # It bounds the server's batch; the batch itself is the server's and is not recorded here.
    num_concurrent: int | None = Field(default=None, ge=1, json_schema_extra={"arrow": "int32"})


def clip(text: str, limit: int) -> str:
    """``text`` as it is when it has at most ``limit`` characters, else its first quarter and last three
    quarters of ``limit`` around a line naming how many characters were left out (an answer filter
    reads the end of a response, so the end is kept longer)."""
    if len(text) <= limit:
        return text
    head, tail = limit // 4, limit - limit // 4
    return f"{text[:head]}\n[… {len(text) - head - tail:,} characters left out …]\n{text[len(text) - tail :]}"


class DataRecord(Strict):
    source: Literal["local", "hub", "hub-cache", "fixture", "generated"]
    dataset_id: str
    revision: str | None
    config: str | None = None
    files: dict[str, str] = Field(default_factory=dict)  # split -> file name (no directories)
    file_sha256: dict[str, str] = Field(default_factory=dict)  # split -> sha256 of that file
    label: str  # e.g. "MRCR v2", "fixture (byog-written, not Idavidrein/gpqa)", "generated"
    note: str = ""


class EndpointRecord(Strict):
    base_url: str
    model: str
    tokenizer: str | None = None
    max_model_len: int | None = None


class SamplingRecord(Strict):
    passes: int
    seeds: list[int]
    temperature: float
    do_sample: bool
    top_p: float | None = None
    max_gen_toks: int | None = None
    response_cache: Literal["off"] = "off"


class EvalResults(Strict):
    schema_version: Literal[1] = EVAL_RESULTS_SCHEMA_VERSION
    server: str
    task: dict[str, Any]  # TaskSpec.record()
    data: DataRecord
    endpoint: EndpointRecord
    sampling: SamplingRecord
    runner: dict[str, Any]  # lm-eval version + model class and args, or the MRCR runner's settings
    limit: int | None
    n_items: int
    n_rows: int
    score: float  # points 0-100: mean over items of the per-item mean over passes
    stderr: float | None  # points: sd of the per-item means / sqrt(n)
    pass_scores: list[float]  # points, one per pass
    wall_s: float
    extra: dict[str, Any] = Field(default_factory=dict)  # runner-specific (MRCR bins, token counter)


class EvalScore(Derived):
    """summary.json evals.scores[]: one per (server, task)."""

    server: str
    task: str
    data: str | None = None  # the data label of results.json: "MRCR v2", "generated ...", "fixture ..."
    n_items: int
    passes: int
    score: float | None  # points 0-100
    stderr: float | None


class PairedComparison(Derived):
    """The paired statistics of candidate vs baseline on the same items (``byog.analysis.stats``)."""

    n: int
    margin: float
    method: PairedMethod  # "tango-score" (binary items) or "paired-t" (byog.analysis.stats)
    d: float | None
    se_d: float | None
    ci90_low: float | None
    ci90_high: float | None
    ci95_low: float | None
    ci95_high: float | None
    verdict: Verdict
    within_1se: bool | None
    z: float | None
    power: float | None
    mde: float | None


class SequentialLook(Derived):
    """One planned look of the group-sequential gate (``byog.analysis.group_sequential``)."""

    items: int  # the first items (in the plan's item order) this look saw
    d: float
    se_d: float
    z_lower: float  # (d + margin) / SE_d; tango-score: T(-margin)
    z_upper: float  # (margin - d) / SE_d; tango-score: -T(+margin)
    z_zero: float  # d / SE_d; tango-score: T(0), McNemar's z
    equivalence_bound: float  # both TOST statistics at or above it: equivalent
    difference_bound: float  # |z_zero| at or above it, and |d| > margin: different
    decision: Literal["equivalent", "different", "continue", "inconclusive"]


class SequentialRecord(Derived):
    """The plan's group-sequential design for a verdict and every look it took, up to the one that stopped."""

    fractions: list[float]  # the plan's looks
    spending: Literal["obf", "pocock"]
    alpha: float
    method: PairedMethod  # the statistic of every look; tango-score looks use z boundaries, paired-t t ones
    looks: list[SequentialLook]
    decision: Literal["equivalent", "different", "inconclusive"]  # the stopping look's
    items_used: int  # items seen at the stopping look
    items_planned: int


class StratumVerdict(PairedComparison):
    """The paired comparison on one operating point's items (``byog.analysis.strata``)."""

    operating_point: int  # the num_concurrent both servers ran this stratum's items at
    # Summary schema 14 added: each server's output tokens per engine step over this stratum, from its
    # own counters (results.json extra.strata.server_batch); None where it recorded none (no /metrics)
    candidate_tokens_per_step: float | None = None
    baseline_tokens_per_step: float | None = None


class StratumContrast(Derived):
    """Whether the candidate-minus-baseline difference at ``operating_point`` differs from that at
    ``reference`` (the smallest point): delta = d(point) - d(reference), Welch's t on the two strata's
    per-item differences, intervals Bonferroni-adjusted over the contrasts (``byog.analysis.stats``)."""

    operating_point: int
    reference: int
    delta: float | None
    se: float | None
    df: int | None  # Welch-Satterthwaite, rounded down
    ci90_low: float | None  # the TOST interval (1 - 2 alpha / contrasts)
    ci90_high: float | None
    ci95_low: float | None  # the difference test's interval (1 - alpha / contrasts)
    ci95_high: float | None
    verdict: Literal["equivalent", "different", "inconclusive"]  # of delta against the eval's margin


class StrataRecord(Derived):
    """An eval with operating points: the verdict per stratum and whether accuracy depends on the point."""

    points: list[int]  # the plan's operating points, ascending
    assignment: str  # how each item's stratum follows from its id and sha256 (recomputable)
    strata: list[StratumVerdict]
    contrasts: list[StratumContrast]
    # yes: a contrast is "different"; no: every contrast is "equivalent"; else undetermined
    depends: Literal["yes", "no", "undetermined"]


class EvalVerdict(PairedComparison):
    """summary.json evals.verdicts[]: one per (task, candidate vs baseline, speculative on/off).

    ``verdict`` is "degenerate" when ``degenerate`` names any case (the TOST's intervals stay in
    the row). ``screening``: the plan's design for this eval cannot keep the gate sound (its
    planned false-fail rate, predicted before the run, is over 5%, or, for a greedy verdict, the
    rate at the re-draw its own discordance implies is), so whatever the verdict the row is a
    screening result, never a pass (docs/statistics.md).
    """

    task: str
    candidate: str
    baseline: str
    speculative: bool
    # Summary schema 2 added the fields below (byog.schemas.summary.ADDED_IN); a schema-1 summary lacks them.
    discordant: int | None = None  # items whose per-item scores differ between the two servers
    planned_false_fail: float | None = (
        None  # byog.analysis.gate_power at the plan's n, K and margin (None: unknown task)
    )
    screening: bool = False
    degenerate: list[DegenerateReason] = Field(default_factory=list)
    degenerate_why: list[str] = Field(default_factory=list)  # one sentence per reason, same order
    # Summary schema 4 added the fields below: greedy single-pass verdicts, not degenerate, judged at
    # the discordance the pair showed (byog.analysis.gate_power.observed_design); None otherwise.
    planned_redraw: float | None = None  # the re-draw rate the plan's design was judged at
    observed_discordance: float | None = None  # discordant / n
    observed_redraw: float | None = None  # the re-draw rate that discordance implies
    observed_false_fail: float | None = None  # the design's false-fail rate at the observed rate
    observed_power: float | None = None  # its power at the observed rate
    observed_sound: bool | None = None  # observed_false_fail <= 5%
    sound_n: int | None = None  # least n sound at the observed rate (None: more than 20,000 or n/a)
    screening_label: str | None = None  # "screening (observed re-draw X% > planned Y%)" when unsound
    # Summary schema 8 added: the group-sequential design's looks where the plan sets ``looks``; its
    # decision is then the verdict (unless degenerate)
    sequential: SequentialRecord | None = None
    # Summary schema 12 added: per operating point where the plan sets ``operating_points``
    strata: StrataRecord | None = None


class EvalSummary(Derived):
    scores: list[EvalScore] = Field(default_factory=list)
    verdicts: list[EvalVerdict] = Field(default_factory=list)


def write_eval_items(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rows (a field a row lacks is null) as items.parquet of schema EVAL_ITEM_SCHEMA_VERSION."""
    tables.write_rows(path, EvalItemRow, rows, version=EVAL_ITEM_SCHEMA_VERSION)


register("eval_results", EvalResults, version=EVAL_RESULTS_SCHEMA_VERSION, files=("evals/*/*/results.json",))
register(
    "eval_item",
    EvalItemRow,
    version=EVAL_ITEM_SCHEMA_VERSION,
    files=("evals/*/*/items.parquet",),
    kind="parquet",
    older_layouts=((1, EvalItemRowV1), (2, EvalItemRowV2)),
)
register("eval_score", EvalScore, version=EVAL_RESULTS_SCHEMA_VERSION)
register("eval_verdict", EvalVerdict, version=EVAL_RESULTS_SCHEMA_VERSION)
