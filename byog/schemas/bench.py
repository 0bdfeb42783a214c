"""The bench's records: a point of the matrix, each request's raw row, the point's record, and
the bench part of summary.json.

Raw (the source of truth): ``RequestRow`` (one parquet row of ``bench/<server>/<point>.parquet``,
filled in place by the streaming client) and ``PointRecord`` (``bench/<server>/<point>.json``).
Derived (``summary.json``, recomputed by verify): ``PointSummary`` and ``PointComparison``.
Each is declared once here; the parquet schema (``byog.schemas.tables``) and the exported JSON
Schemas are derived from these models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Final, Literal

import numpy as np
from pydantic import ConfigDict, Field

from byog.schemas import chunk_timing, tables
from byog.schemas.base import Derived, Strict
from byog.schemas.plan import DatasetPrompts, RandomPrompts, RequestBodyStyle, SloSpec, SyntheticSessions, TraceSource
from byog.schemas.registry import REGISTRY, register

if TYPE_CHECKING:
    import pyarrow as pa

# 2: ClientLoad's lag limit is share-of-ITL + floor (v1 records may hold a fixed limit)
# 3: NVML power/clock samples (``power``), counter deltas over the measured waves only, agentic
#    points, SLOs and search probes (optional fields: a v2 record reads as it is)
# 4: a batch point's sequential stopping (``point.ci_target``, ``point.max_waves``, ``stopping``) and
#    the earlier attempts of a re-measured point (``attempts``); a v3 record ran a fixed count once
BENCH_SCHEMA_VERSION: Final = 4
# 2: cached_tokens and the agentic columns; 3: the interleave columns (optional: older files lack them);
# 4: chunk_t_ns (int64 ns) becomes chunk_gap_us (microsecond gaps, byog.schemas.chunk_timing), and
#    the file records its version (parquet metadata); a file without one has the layout of 1-3
REQUEST_ROW_SCHEMA_VERSION: Final = 4


def load_label(
    kind: str,
    batch_size: int | None,
    concurrency: int | None,
    rate: float | None,
    speedup: float | None,
    *,
    rate_unit: str,
) -> str:
    """B=4, C=8, x2 (a trace's speed-up), C=4 sessions, or the request rate."""
    if kind == "batch":
        return f"B={batch_size}"
    if kind == "concurrency":
        return f"C={concurrency}"
    if kind == "agentic":
        return f"x{speedup:g}" if speedup is not None else f"C={concurrency} sessions"
    return f"{rate:g}{rate_unit}"


class BenchPoint(Strict):
    """One measured point: a workload at one (B or C or rate, ISL, OSL), or an agentic workload at
    one session concurrency (synthetic sessions) or speedup (a replayed trace); ISL and OSL are
    then 0: every turn has its own, in its row."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    point_id: str
    workload: str  # the workload's name in the plan
    kind: Literal["batch", "concurrency", "rate", "agentic"]
    batch_size: int | None = None
    concurrency: int | None = None  # concurrency: requests in flight; agentic: sessions in flight
    rate: float | None = None  # requests/s
    isl: int
    osl: int
    api: Literal["completions", "chat"] = "completions"
    prompts: RandomPrompts | DatasetPrompts
    warmup_waves: int = 0  # batch
    waves: int = 0  # batch: measured waves (the minimum when ``ci_target`` is set: the plan's min_waves)
    ci_target: float | None = None  # batch: stop once the decode-rate CI's relative half-width is at most this
    max_waves: int = 0  # batch with ``ci_target``: the cap on measured waves, the plan's waves (0: a fixed ``waves``)
    num_prompts: int = 0  # concurrency/rate: measured requests
    warmup_prompts: int = 0  # concurrency
    prompt_seed: int = 0
    arrival_seed: int = 0  # rate
    reset_prefix_cache: bool = False
    request_body: RequestBodyStyle = "byog"
    servers: tuple[str, ...] = ()
    slo: SloSpec | None = None  # the workload's SLO: the point reports goodput against it
    search_probe: bool = False  # rate: a probe a rate search chose while running (not in the plan's list)
    # agentic
    source: SyntheticSessions | TraceSource | None = Field(default=None, discriminator="kind")
    sessions: int = 0  # measured sessions (synthetic)
    warmup_sessions: int = 0
    speedup: float | None = None  # trace: send time = trace time / speedup
    max_context: int | None = None  # every turn's prompt + answer fits (sessions end early otherwise)

    @property
    def total_requests(self) -> int:
        """Requests sent, warm-up included (agentic: 0 = known once the sessions are built)."""
        if self.kind == "agentic":
            return 0
        if self.kind == "batch":
            assert self.batch_size is not None
            return self.batch_size * (self.warmup_waves + self.wave_cap)
        return self.num_prompts + self.warmup_prompts

    @property
    def wave_cap(self) -> int:
        """The most measured waves the point may run: ``max_waves`` when it stops on its CI, else ``waves``."""
        return max(self.waves, self.max_waves) if self.ci_target is not None else self.waves

    @property
    def measured_requests(self) -> int:
        return self.batch_size * self.waves if self.kind == "batch" and self.batch_size else self.num_prompts

    @property
    def load_label(self) -> str:
        return load_label(self.kind, self.batch_size, self.concurrency, self.rate, self.speedup, rate_unit=" req/s")


class _RequestFacts(Strict):
    """What a request row holds besides its chunks' arrival times (``RequestRow`` holds those in
    nanoseconds, ``StoredRequestRow`` as microsecond gaps: ``byog.schemas.chunk_timing``)."""

    request_index: int
    wave: int  # batch: 0..W+R-1 (warm-up waves first); other workloads: -1
    warmup: bool
    expected_n_in: int  # prompt tokens the server should count (ISL for completions)
    t_send_ns: int = 0
    chunk_tokens: list[int] = Field(default_factory=list)  # output tokens each chunk carried (usage deltas)
    n_in: int | None = None  # the server's usage.prompt_tokens
    n_out: int = 0  # the server's usage.completion_tokens
    error: str | None = None
    usage_per_chunk: bool = True  # False: the server streamed chunks without usage (counts guessed as 1)
    # the server's usage.prompt_tokens_details.cached_tokens (vLLM: --enable-prompt-tokens-details); None: not reported
    cached_tokens: int | None = None
    # agentic points only (None elsewhere): the request's place in its session
    session: int | None = None  # session number (a trace: the line of the session's first request)
    agent: int | None = None  # 0 = the session's main agent, 1.. = its sub-agents
    turn: int | None = None  # index within the agent's turns
    parent_turn: int | None = None  # sub-agents: the main-agent turn they forked after; -1 for a main agent
    expected_n_out: int | None = None  # the turn's exact answer length (its OSL)
    think_s: float | None = None  # the pause slept before the turn was sent
    reusable_tokens: int | None = (
        None  # prompt tokens the workload shares with what was sent or generated before (what a cache can hold)
    )
    # an interleaved pair only (None elsewhere): the visit's place in the pair's ABBA sequence of the
    # point (0, 1, ...; visits 2k and 2k+1 form block k) and which side of the pair ran it
    interleave_seq: int | None = None
    interleave_side: str | None = None  # "A" or "B" (byog.analysis.interleave.side_of)


class RequestRow(_RequestFacts):
    """One request as the client saw it (filled in place by the client; what the formulas read).
    Timestamps are the client process's ``time.perf_counter_ns``; only chunks that carried >= 1
    output token are listed. Also the parquet row of bench_row schema <= 3 (read as it is)."""

    chunk_t_ns: list[int] = Field(default_factory=list)  # arrival of each chunk that carried output tokens

    @property
    def ok(self) -> bool:
        return self.error is None and len(self.chunk_t_ns) > 0

    @property
    def t_first_ns(self) -> int:
        return self.chunk_t_ns[0]

    @property
    def t_last_ns(self) -> int:
        return self.chunk_t_ns[-1]


class StoredRequestRow(_RequestFacts):
    """One parquet row of ``bench/<server>/<point>.parquet`` (bench_row schema 4): a ``RequestRow``
    with its chunk times as microsecond gaps (``byog.schemas.chunk_timing``: gap 0 is the TTFT)."""

    chunk_gap_us: list[int] = Field(default_factory=list)


class ClientLoad(Strict):
    """How busy the load generator itself was while it measured (client saturation check)."""

    cpu_share: float | None = None  # client process CPU seconds / wall seconds (1.0 = one core)
    loop_lag_p99_s: float | None = None  # event-loop lag: how late a periodic timer woke up
    loop_lag_max_s: float | None = None
    cpu_share_limit: float
    # lag limit = max(floor, share x the point's median ITL): a late read shifts a token's timestamp
    loop_lag_share_of_itl: float
    loop_lag_floor_s: float


class PowerTrace(Strict):
    """NVML samples taken during a point (``byog.bench.nvml_sampler``). Lists are [sample][gpu].

    ``available: false`` (no NVIDIA driver or bindings, e.g. the CPU default) carries only the
    reason: every number is absent, never zero. ``t_ns`` is on the rows' ``perf_counter_ns`` clock.
    """

    available: bool
    reason: str | None = None  # why there are no samples
    gpu_indices: list[int] | None = None  # NVML indices (PCI bus order)
    gpu_names: list[str] | None = None
    interval_s: float | None = None
    # "counter": nvmlDeviceGetTotalEnergyConsumption (mJ); "integrated-power": trapezoid of nvmlDeviceGetPowerUsage
    energy_source: Literal["counter", "integrated-power"] | None = None
    power_limit_w: list[float] | None = None
    t_ns: list[int] | None = None
    power_w: list[list[float]] | None = None
    energy_mj: list[list[float]] | None = None  # only with energy_source "counter"
    sm_clock_mhz: list[list[int]] | None = None
    mem_clock_mhz: list[list[int]] | None = None
    clock_event_reasons: list[list[int]] | None = None  # nvmlClocksEventReasons bitmask
    temperature_c: list[list[int]] | None = None
    errors: list[str] | None = None  # reads that failed mid-point (their sample was dropped)

    def per_gpu(self, field: str) -> list[list[float]]:
        """A [sample][gpu] field as [gpu][sample] (what ``byog.analysis.energy`` takes)."""
        rows = getattr(self, field) or []
        return [list(col) for col in zip(*rows, strict=True)]


class WaveStopping(Strict):
    """How a batch point with a CI target chose its number of measured waves (byog.analysis.wave_stopping):
    the rule, the relative half-width of the decode-rate CI after each measured wave (None: not
    computable, e.g. after one wave), how many waves it measured and why it stopped there."""

    target: float  # relative half-width of the 95% wave CI of decode tok/s
    min_waves: int
    max_waves: int
    level: float
    half_widths: list[float | None]
    waves: int
    reason: Literal["target", "cap"]


class Attempt(Strict):
    """An earlier measurement of a point that was invalid for a transient cause only, kept beside the
    point's final files (``bench/<server>/attempts/<point>-<n>.{json,parquet}``)."""

    attempt: int  # 1 = the first measurement
    started_at: str
    invalid_reasons: list[str]
    waited_s: float  # until its cause had cleared, before the next attempt
    cleared: bool  # False: still there after the wait; measured again anyway


class PointRecord(Strict):
    """Written after the rows, atomically; ``status: failed`` (and no rows) makes a rerun retry it."""

    schema_version: Literal[4] = BENCH_SCHEMA_VERSION
    server: str
    point: BenchPoint
    prompts_label: str  # "random-ids" or "dataset:<name>": results on random tokens are labelled so
    status: Literal["complete", "failed"]
    error: str | None = None
    log_tail: str | None = None
    started_at: str  # UTC, ISO 8601
    duration_s: float  # wall time of the point, warm-up included
    t_start_ns: int  # perf_counter_ns when the first request was sent (warm-up included)
    t_end_ns: int
    client: ClientLoad | None = None
    counter_deltas: dict[str, float | list[float]] = Field(default_factory=dict)  # /metrics after - before
    # batch: /metrics after - after the warm-up waves (None: not taken, e.g. records of schema < 3)
    measured_counter_deltas: dict[str, float | list[float]] | None = None
    power: PowerTrace | None = None  # None: records of schema < 3
    prefix_cache_reset: bool | None = None  # None: not asked; False: the server refused
    stopping: WaveStopping | None = None  # batch points with a CI target (records of schema < 4: None)
    attempts: list[Attempt] = Field(default_factory=list)  # the earlier attempts of a re-measured point
    byog_version: str


# --- summary.json: derived ---------------------------------------------------------------------


class Percentiles(Derived):
    """mean, P50, P90, P99 of one quantity over a point's measured requests (None: no data)."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


class ClockStats(Derived):
    mean: float | None = None
    min: float | None = None


class PowerMetrics(Derived):
    """Energy and clocks of one point from its NVML samples (``byog.analysis.energy``).

    ``window``: "decode" = the batch workload's decode windows (tokens = tokens in them);
    "point" = from the first measured send to the last measured token (tokens = every output token).
    """

    available: bool
    reason: str | None = None  # why not measured
    energy_source: str | None = None
    window: Literal["decode", "point"] | None = None
    energy_j: float | None = None  # all sampled GPUs together
    j_per_token: float | None = None
    mean_power_w: float | None = None
    sm_clock_mhz: ClockStats | None = None
    mem_clock_mhz: ClockStats | None = None
    throttle: dict[str, float] | None = None  # throttling reason -> share of samples in the measured span


class PointMetrics(Derived):
    """Every metric of one point (formulas: ``byog.analysis.metrics``; docs/metrics.md)."""

    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    itl_request_mean_s: Percentiles
    e2e_latency_s: Percentiles
    tok_s_user: Percentiles  # Pq = 1 / Pq(tpot): P90 is the slowest 10% of users
    output_tok_s: float | None = None
    decode_tok_s: float | None = None
    decode_step_s: float | None = None
    decode_window_s: float | None = None
    tokens_in_window: int | None = None
    decode_steps: float | None = None  # engine steps in the windows: chunks per request (one SSE chunk per step)
    tokens_per_step: float | None = None  # tokens in window / decode_steps (all B requests)
    crosscheck_decode_tok_s: float | None = None  # steps/s x acceptance_length x B (the PR's conversion)
    crosscheck_ratio: float | None = None  # crosscheck_decode_tok_s / decode_tok_s
    acceptance_length: float | None = None  # 1 + accepted / drafts (per drafted step)
    acceptance_length_ci: list[float] | None = None  # 95% [low, high], drafts as independent trials
    acceptance_per_position: list[float] | None = None
    acceptance_per_position_ci: list[list[float]] | None = None  # Wilson 95% per position
    draft_coverage: float | None = None  # drafts / request-steps: share of decode steps that carried a draft
    tokens_per_request_step: float | None = None  # generated / request-steps: what each request gains per step
    achieved_concurrency: float | None = None
    power: PowerMetrics | None = None


class TurnLatency(Derived):
    """TTFT of the turns with one index (0 = a session's first prompt), main agents only."""

    turn: int
    n: int
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


class SessionSummary(Derived):
    """An agentic point's per-session numbers (formulas: ``byog.analysis.sessions``)."""

    sessions: int  # sessions with a measured turn
    sessions_complete: int  # sessions whose every turn succeeded
    turns: int  # measured turns (requests), sub-agents included
    subagent_turns: int
    ttft_s_by_turn: list[TurnLatency]
    ttft_s_subagent: Percentiles  # sub-agents' turns (their first one starts from the parent's context)
    prompt_tokens: Percentiles  # the context each turn sent
    prefix_hit_rate: float | None = None  # sum cached_tokens / sum prompt tokens (usage; None: not reported)
    prefix_hit_rate_counters: float | None = None  # Δ prefix_cache_hits / Δ prefix_cache_queries around the point
    reusable_share: float | None = None  # sum reusable_tokens / sum prompt tokens: an ideal cache's hit rate
    session_s: Percentiles  # first send to last token of a session, pauses included


class GoodputSummary(Derived):
    """The share of a point's measured requests inside its workload's SLO, and the goodput."""

    ttft_s: float | None = None  # the limits held against
    tpot_s: float | None = None
    e2e_s: float | None = None
    target_share: float
    measured: int
    good: int
    slo_share: float | None = None
    goodput_req_s: float | None = None
    goodput_tok_s: float | None = None
    meets_target: bool | None = None  # slo_share >= target_share


class PointSummary(Derived):
    """summary.json bench.points[]: one per (server, point) of the plan, measured or not (launch 1);
    bench.launch_points[]: the same for launches 2..R."""

    # Added later (launches, the agentic workload): left out while empty, so a run without them
    # keeps the bytes it had (verify compares summary.json).
    omit_when_empty: ClassVar[frozenset[str]] = frozenset(
        {"launch", "speedup", "search_probe", "sessions", "goodput", "remeasured", "stopping"}
    )

    server: str
    point_id: str
    workload: str
    kind: Literal["batch", "concurrency", "rate", "agentic"]
    batch_size: int | None = None
    concurrency: int | None = None
    rate: float | None = None
    speedup: float | None = None  # a replayed trace
    search_probe: bool = False  # a rate a search chose while running
    isl: int
    osl: int
    api: Literal["completions", "chat"]
    prompts: str | None = None  # the point record's prompts label
    launch: int | None = None  # launch r >= 2 of the server (bench.launch_points); None: launch 1
    valid: bool
    invalid_reasons: list[str]
    n_requests: int
    metrics: PointMetrics | None = None
    sessions: SessionSummary | None = None  # agentic points
    goodput: GoodputSummary | None = None  # points of a workload with an SLO
    remeasured: int | None = None  # times measured again after a transient cause (its record's attempts)
    stopping: WaveStopping | None = None  # how a batch point with a CI target chose its waves

    @property
    def load_label(self) -> str:
        return load_label(self.kind, self.batch_size, self.concurrency, self.rate, self.speedup, rate_unit="/s")


PerfLabel = Literal["faster", "slower", "equivalent", "within noise", "screening"]


class PointComparison(Derived):
    """summary.json bench.comparisons[]: candidate / baseline of one headline metric at one point.

    With more than one launch on a side (or a calibration) the values pool every launch and the
    CIs are the launch t interval (``units`` "launches", ``ci_df`` its degrees of freedom); with an
    A/A margin for the metric the point is labelled (byog.analysis.perf_equivalence). With one
    launch per side and no calibration the CI is the wave bootstrap, ``ci_note`` says so and the
    label is "screening". Those fields are left out when they do not apply.
    """

    omit_when_empty: ClassVar[frozenset[str]] = frozenset(
        {"launches", "ci90_low", "ci90_high", "margin", "label", "conditions", "ci_df", "ci_note"}
    )

    point_id: str
    candidate: str
    baseline: str
    metric: str
    candidate_value: float
    baseline_value: float
    ratio: float
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float
    units: Literal["waves", "requests", "ABBA blocks", "launches"]  # what the CI's spread comes from
    within_noise: bool | None = None  # the CI holds 1
    launches: list[int] | None = None  # [candidate, baseline] launches pooled, when either is > 1
    ci90_low: float | None = None  # the 90% CI of the TOST (same resamples), with a label
    ci90_high: float | None = None
    margin: float | None = None  # the A/A margin of this metric, as a ln-ratio
    label: PerfLabel | None = None
    ci_df: int | None = None  # the launch t interval's degrees of freedom
    # what the CI leaves out (perf_equivalence.ONE_LAUNCH_NOTE), or the calibration it cites
    ci_note: str | None = None
    # why the two servers' GPU conditions (mean SM clock, power-cap share) differ at this point
    conditions: str | None = None


class LaunchShare(Derived):
    """summary.json bench.launch_shares[]: how much of a point's variance is between launches."""

    server: str
    point_id: str
    metric: str
    launches: int
    units: int  # waves (batch) or requests, over all launches
    between_var: float
    within_var: float
    share: float  # between / (between + within)


class AAPoint(Derived):
    point_id: str
    ratio: float  # the statistic on the baseline's launch 2 / launch 1


class AAMargin(Derived):
    """summary.json bench.aa[]: the A/A margin of one metric, from the baseline launched twice."""

    baseline: str
    metric: str
    margin: float  # ln-ratio: max(1%, 1.96 x RMS of ln(A2 / A1) over the points)
    points: list[AAPoint]


class RateProbe(Derived):
    rate: float
    point_id: str
    slo_share: float | None = None  # None: the probe failed or is missing (counts as missing the target)


class RateSearchSummary(Derived):
    """summary.json bench.rate_searches[]: the highest rate inside an SLO, from the measured probes."""

    server: str
    workload: str
    target_share: float
    probes: list[RateProbe]  # in rate order
    best_rate: float | None = None  # the highest rate that met the target below the lowest failing one
    failing_rate: float | None = None
    converged: bool
    reason: str
    non_monotone: list[float] = Field(default_factory=list)


class WakeEffect(Derived):
    """summary.json bench.wake_effects[]: an interleaved server's decode speed in the waves right after
    it was woken against its waves that continued a visit (byog.analysis.interleave.follows_wake).

    ``flagged`` when the bootstrap CI of the ratio excludes 1: waking changed the server's speed by
    more than its own wave-to-wave noise, and the pair's ratio carries that change.
    """

    server: str
    point_id: str
    woken_waves: int
    continued_waves: int
    ratio: float | None = None  # decode tok/s, woken waves / continued waves
    ci_low: float | None = None
    ci_high: float | None = None
    flagged: bool | None = None  # None: too few waves of a kind to judge


class WakeIntegrity(Derived):
    """summary.json bench.wake_integrity[]: an interleaved pair's wake checks in one launch and the method
    its verdict uses (byog.analysis.wake.integrity): ``interleaved`` where every woken server generated
    what it did before its first sleep (and, drafting, accepted as many drafts), ``sequential`` for the
    points measured after a check failed (``fallback_points``)."""

    candidate: str
    baseline: str
    launch: int = 1
    method: Literal["interleaved", "sequential", "interleaved, then sequential"]
    why: str
    wakes_checked: int
    wakes_matched: int
    max_abs_dlogprob: float | None = None  # B = 1, over every woken server's fingerprints
    changed: list[str] = Field(default_factory=list)  # each failed check's sentence
    fallback_points: list[str] = Field(default_factory=list)


class BenchSummary(Derived):
    omit_when_empty: ClassVar[frozenset[str]] = frozenset(
        {"launch_points", "launch_shares", "aa", "rate_searches", "wake_effects", "wake_integrity"}
    )

    points: list[PointSummary] = Field(default_factory=list)
    comparisons: list[PointComparison] = Field(default_factory=list)
    launch_points: list[PointSummary] = Field(default_factory=list)
    launch_shares: list[LaunchShare] = Field(default_factory=list)
    aa: list[AAMargin] = Field(default_factory=list)
    rate_searches: list[RateSearchSummary] = Field(default_factory=list)
    wake_effects: list[WakeEffect] = Field(default_factory=list)  # interleaved pairs only
    wake_integrity: list[WakeIntegrity] = Field(default_factory=list)  # interleaved pairs only


register("bench_point", PointRecord, version=BENCH_SCHEMA_VERSION, files=("bench/*/*.json",))
register(
    "bench_row",
    StoredRequestRow,
    version=REQUEST_ROW_SCHEMA_VERSION,
    files=("bench/*/*.parquet",),
    kind="parquet",
    older_layouts=((3, RequestRow),),
)


def write_request_rows(path: Path, rows: Sequence[RequestRow]) -> None:
    """A point's rows as parquet (schema 4), ordered by request index (the same rows give the same bytes)."""
    ordered = sorted(rows, key=lambda r: r.request_index)
    offsets = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum([len(r.chunk_t_ns) for r in ordered], out=offsets[1:])
    gaps = chunk_timing.gaps_us(
        np.array([r.t_send_ns for r in ordered], dtype=np.int64),
        offsets,
        np.array([t for r in ordered for t in r.chunk_t_ns], dtype=np.int64),
    ).tolist()
    stored = []
    for i, row in enumerate(ordered):
        data = row.model_dump(exclude={"chunk_t_ns"})
        data[chunk_timing.GAP_COLUMN] = gaps[offsets[i] : offsets[i + 1]]
        stored.append(data)
    tables.write_rows(
        path,
        StoredRequestRow,
        stored,
        compression="zstd",
        version=REQUEST_ROW_SCHEMA_VERSION,
        encodings={chunk_timing.GAP_COLUMN: chunk_timing.GAP_ENCODING},
    )


def read_request_table(path: Path) -> pa.Table:
    """A point's rows file as an arrow table with ``RequestRow``'s columns, whatever its layout:
    ``chunk_t_ns`` (list<int64>, ns) read as written (schema <= 3) or rebuilt from the microsecond
    gaps (schema 4). The one reader of per-request timing: the formulas' columns
    (``byog.analysis.request_columns``) and ``read_request_rows`` both read through it.

    Raises ValueError when the file's recorded version or its columns do not fit a layout."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read(use_threads=False)  # not read_table: it imports pandas (0.4 s)
    try:
        version = tables.file_version(table.schema.metadata)
    except ValueError as err:
        raise ValueError(f"{path.name}: {err}") from None
    model = REGISTRY["bench_row"].model_for(version)
    if model is RequestRow:
        if chunk_timing.GAP_COLUMN in table.column_names:
            raise ValueError(f"{path.name} has {chunk_timing.GAP_COLUMN} but records no schema version 4")
        return _as_request_rows(table)
    if "chunk_t_ns" in table.column_names:
        raise ValueError(f"{path.name} records schema version {version} but has chunk_t_ns")
    if chunk_timing.GAP_COLUMN not in table.column_names:
        return _as_request_rows(table)
    offsets, gaps = tables.list_column(table, chunk_timing.GAP_COLUMN)
    send = tables.int_column(table, "t_send_ns") if "t_send_ns" in table.column_names else np.zeros(table.num_rows)
    times = chunk_timing.chunk_t_ns(send.astype(np.int64), offsets, gaps)
    column = tables.list_array(offsets, times)
    return _as_request_rows(table.append_column("chunk_t_ns", column))


def _as_request_rows(table: pa.Table) -> pa.Table:
    """``RequestRow``'s columns in its order: a column an older file lacks holds the field's default."""
    import pyarrow as pa

    schema = tables.arrow_schema(RequestRow)
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            # cast only what differs: a cast imports pyarrow.compute (0.1 s of every verify)
            columns.append(column if column.type == field.type else column.cast(field.type))
        else:
            default = RequestRow.model_fields[field.name].get_default(call_default_factory=True)
            columns.append(pa.array([default] * table.num_rows, type=field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def read_request_rows(path: Path) -> list[RequestRow]:
    """Rows as ``RequestRow``s (unvalidated, as ``tables.read_rows``), whatever the file's layout."""
    return [RequestRow.model_construct(**row) for row in read_request_table(path).to_pylist()]
