"""The Plan: which servers to launch, which workloads and evals to run on each, and how to compare.

A plan is pure data (pydantic, ``extra="forbid"`` everywhere so a misspelt key is an error that
names the key). Expanding a plan into concrete bench points lives in ``byog.plans.expand``; the
servers' config classes, one per runtime, in ``byog.schemas.runtime_configs`` (re-exported here).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt, model_validator

from byog.schemas.base import Strict
from byog.schemas.registry import register
from byog.schemas.runtime_configs import (
    _HOLDS_SERVERS,
    DEFAULT_RUNTIME,
    LOCAL_HOSTS,
    SERVER_CONFIGS,
    DockerConfig,
    EndpointConfig,
    HostedConfig,
    LaunchedConfig,
    LocalConfig,
    Platform,
    ServerBase,
    ServerConfig,
    SlurmConfig,
    SshConfig,
    register_server_config,
    runtime_names,
    server_config,
)

__all__ = [  # the server configs, re-exported: a plan's readers import them from here
    "DEFAULT_RUNTIME",
    "LOCAL_HOSTS",
    "SERVER_CONFIGS",
    "DockerConfig",
    "EndpointConfig",
    "HostedConfig",
    "LaunchedConfig",
    "LocalConfig",
    "Platform",
    "ServerBase",
    "ServerConfig",
    "SlurmConfig",
    "SshConfig",
    "register_server_config",
    "runtime_names",
    "server_config",
]

PLAN_SCHEMA_VERSION: Final = 4

BUILTIN_MODEL = "builtin:smollm2-135m-instruct"


class ModelSpec(Strict):
    """What every server serves. ``path`` is a local HF directory, a hub id, or ``builtin:...``."""

    path: str
    served_name: str | None = None
    tokenizer: str | None = None
    max_model_len: PositiveInt | None = None
    # the checkpoint's size, for ``byog plan``'s start-up estimate where the weights are not readable here
    weights_gib: PositiveFloat | None = None


class RandomPrompts(Strict):
    """Random token ids of exactly ISL tokens, checked with the server's /tokenize.

    ``send: ids`` (default) sends the ids themselves: the server does not tokenize. ``send: text``
    sends them as text re-encoded to exactly ISL tokens, so the server tokenizes every request in
    its critical path, as it does for `vllm bench serve`'s random dataset (text prompts). At long
    prompts the two differ measurably (docs/metrics.md, "Fidelity against `vllm bench serve`").
    """

    kind: Literal["random"] = "random"
    send: Literal["ids", "text"] = "ids"


class DatasetPrompts(Strict):
    """Real prompts from a dataset (MT-Bench, GSM8K), truncated/padded to ISL tokens.

    ``repeat: false``: consecutive rows concatenated until ISL tokens. ``repeat: true``: ONE row
    (GSM8K: "Question: ... Answer: ..." with its worked answer; MT-Bench: the first turn) repeated
    until ISL tokens: real text whose continuation is itself, so a prompt-lookup (ngram) drafter
    finds matches; labelled ``dataset:<name>:repeated``.
    """

    kind: Literal["dataset"] = "dataset"
    dataset: Literal["mt_bench", "gsm8k"]
    repeat: bool = False


Prompts = Annotated[RandomPrompts | DatasetPrompts, Field(discriminator="kind")]


# What each request asks of the server (byog.bench.client.request_body): "byog" (exact per-chunk
# token counts) or "vllm" (the body `vllm bench serve` sends, for a like-for-like comparison).
RequestBodyStyle = Literal["byog", "vllm"]


class SloSpec(Strict):
    """Per-request latency limits in seconds (any subset) and the share of requests that must meet them."""

    ttft_s: float | None = Field(default=None, gt=0)
    tpot_s: float | None = Field(default=None, gt=0)
    e2e_s: float | None = Field(default=None, gt=0)
    target_share: float = Field(default=0.9, gt=0, le=1)  # what a rate search keeps, and what the report flags

    @model_validator(mode="after")
    def _some_limit(self) -> SloSpec:
        if self.ttft_s is None and self.tpot_s is None and self.e2e_s is None:
            raise ValueError("an SLO needs at least one of ttft_s, tpot_s, e2e_s")
        return self


WorkloadLaunches = PositiveInt | None


class _WorkloadBase(Strict):
    name: str | None = None  # defaults to the kind; must be unique within a plan
    servers: list[str] | None = None  # default: every server
    # its points run on the first N launches of each of its servers only (at most the plan's `launches`);
    # one launch leaves launch-to-launch variance out: their perf labels are "screening". Default: every launch
    launches: WorkloadLaunches = None
    isl: list[PositiveInt] = Field(min_length=1)
    osl: list[PositiveInt] = Field(min_length=1)
    prompts: Prompts = Field(default_factory=RandomPrompts)
    api: Literal["completions", "chat"] = "completions"
    reset_prefix_cache: bool = False
    request_body: RequestBodyStyle = "byog"
    slo: SloSpec | None = None  # each point reports the share of requests inside it and the goodput


DEFAULT_MIN_WAVES = 3  # a batch point stopping on its CI runs this many waves at least (docs/statistics.md §8)


class BatchWorkload(_WorkloadBase):
    """Exactly B requests start together; W warm-up waves, then R measured waves."""

    kind: Literal["batch"] = "batch"
    batch_sizes: list[PositiveInt] = Field(min_length=1)
    warmup_waves: NonNegativeInt = 1
    # measured waves: the most a point runs (the plan's budget), exactly this many with ``ci_target: null``
    waves: PositiveInt = 3
    # stop a point early once the 95% wave CI of its decode tok/s is within +/- this share of it, after
    # ``min_waves`` at least; null: exactly ``waves`` (docs/statistics.md §8)
    ci_target: float | None = Field(default=0.01, gt=0, lt=1)
    # the fewest measured waves a point stops at on its CI; null: 3 (fewer moved A/A verdicts), or ``waves``
    min_waves: PositiveInt | None = None

    @model_validator(mode="after")
    def _minimum_within_budget(self) -> BatchWorkload:
        if self.min_waves is not None and self.min_waves > self.waves:
            raise ValueError(f"min_waves ({self.min_waves}) is above waves ({self.waves}), the most a point runs")
        return self

    @property
    def first_stop(self) -> int:
        """The fewest measured waves a point of this workload runs (``waves`` when stopping is off)."""
        if self.ci_target is None:
            return self.waves
        return min(self.min_waves if self.min_waves is not None else DEFAULT_MIN_WAVES, self.waves)


class ConcurrencyWorkload(_WorkloadBase):
    """Closed loop: C requests in flight until N prompts are done."""

    kind: Literal["concurrency"] = "concurrency"
    concurrencies: list[PositiveInt] = Field(min_length=1)
    num_prompts: PositiveInt
    warmup_prompts: NonNegativeInt = 0


class RateSearch(Strict):
    """Find the highest rate that keeps the SLO's target share: bracketing, then bisection (docs/agentic.md)."""

    start_rate: float = Field(default=1.0, gt=0)  # requests/s of the first probe
    growth: float = Field(default=2.0, gt=1)  # bracketing factor
    rel_tol: float = Field(default=0.1, gt=0)  # stop when (failing - passing) / passing <= rel_tol
    max_probes: PositiveInt = 8
    min_rate: float = Field(default=0.001, gt=0)  # below it: no rate meets the target


class RateWorkload(_WorkloadBase):
    """Open loop: Poisson arrivals at each rate (requests/s), seeded; or a search for the highest rate inside an SLO."""

    kind: Literal["rate"] = "rate"
    rates: list[Annotated[float, Field(gt=0)]] = Field(default_factory=list)
    num_prompts: PositiveInt
    seed: int = 0
    search: RateSearch | None = None  # probes chosen while running, instead of `rates`; needs `slo`

    @model_validator(mode="after")
    def _rates_or_search(self) -> RateWorkload:
        if self.search is None and not self.rates:
            raise ValueError("a rate workload needs 'rates' or a 'search'")
        if self.search is not None and self.rates:
            raise ValueError("a rate workload has either 'rates' or a 'search' (which picks its own rates), not both")
        if self.search is not None and self.slo is None:
            raise ValueError("a rate 'search' looks for the highest rate inside an SLO: give the workload an 'slo'")
        return self


# --- the agentic workload (docs/agentic.md) ---------------------------------------------------


class Constant(Strict):
    kind: Literal["constant"] = "constant"
    value: float = Field(ge=0)


class Uniform(Strict):
    """Uniform on [min, max]; token counts are integers with both ends included."""

    kind: Literal["uniform"] = "uniform"
    min: float = Field(ge=0)
    max: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.max < self.min:
            raise ValueError(f"uniform max {self.max:g} is below min {self.min:g}")
        return self


class LogNormal(Strict):
    """Log-normal with this mean; ``median_ratio = median / mean`` sets the skew (vLLM's multi-turn bench: 0.85)."""

    kind: Literal["lognormal"] = "lognormal"
    mean: float = Field(gt=0)
    median_ratio: float = Field(default=0.85, gt=0, lt=1)
    max: float | None = Field(default=None, gt=0)


class Exponential(Strict):
    kind: Literal["exponential"] = "exponential"
    mean: float = Field(gt=0)
    max: float | None = Field(default=None, gt=0)


Distribution = Annotated[Constant | Uniform | LogNormal | Exponential, Field(discriminator="kind")]


class FanOut(Strict):
    """Sub-agents: after each main-agent turn but the last, fork with ``probability``."""

    probability: float = Field(default=0.15, ge=0, le=1)
    width: Distribution = Field(default_factory=lambda: Uniform(min=2, max=4))  # sub-agents per fork
    turns: Distribution = Field(default_factory=lambda: Uniform(min=2, max=4))  # turns of each sub-agent
    input_tokens: Distribution = Field(default_factory=lambda: Uniform(min=120, max=160))  # a sub-agent's task


class SyntheticSessions(Strict):
    """The seeded session generator; every distribution a parameter (defaults and sources: docs/agentic.md)."""

    kind: Literal["synthetic"] = "synthetic"
    turns: Distribution = Field(default_factory=lambda: Uniform(min=6, max=9))  # main-agent turns per session
    shared_prefix_tokens: NonNegativeInt = 500  # system prompt + tool definitions, shared by every session
    first_input_tokens: Distribution = Field(default_factory=lambda: LogNormal(mean=1000, max=5000))
    input_tokens: Distribution = Field(default_factory=lambda: Uniform(min=120, max=160))  # per later turn
    output_tokens: Distribution = Field(default_factory=lambda: Uniform(min=80, max=120))  # every answer
    think_time_s: Distribution = Field(default_factory=lambda: LogNormal(mean=2.0, median_ratio=0.5, max=30.0))
    fanout: FanOut | None = Field(default_factory=FanOut)


class TraceSource(Strict):
    """A request trace in Mooncake's JSONL format, replayed on its own schedule (docs/agentic.md)."""

    kind: Literal["trace"] = "trace"
    trace: str = "mooncake-conversation-sample"  # a sample shipped with byog, or a path
    block_tokens: PositiveInt = 512  # tokens per hash block (the traces' own 512 = unscaled)
    output_scale: float | None = Field(default=None, gt=0)  # None: block_tokens / 512, like the prompts
    speedups: list[Annotated[float, Field(gt=0)]] = Field(default_factory=lambda: [1.0], min_length=1)
    max_sessions: PositiveInt | None = None  # only the first N sessions (by first arrival), with every turn
    max_requests: PositiveInt | None = None  # the first N requests (by arrival) that fit the context


SessionSource = Annotated[SyntheticSessions | TraceSource, Field(discriminator="kind")]


class AgenticWorkload(Strict):
    """Multi-turn agent sessions with growing context, tool pauses and sub-agents, or a replayed trace."""

    kind: Literal["agentic"] = "agentic"
    name: str | None = None
    servers: list[str] | None = None
    # its points run on the first N launches of each of its servers only (at most the plan's `launches`);
    # one launch leaves launch-to-launch variance out: their perf labels are "screening". Default: every launch
    launches: WorkloadLaunches = None
    source: SessionSource = Field(default_factory=SyntheticSessions)
    concurrencies: list[PositiveInt] = Field(default_factory=lambda: [1])  # sessions in flight (synthetic)
    sessions: PositiveInt = 16  # measured sessions per point (synthetic)
    warmup_sessions: NonNegativeInt = 1  # run first, not measured
    max_context: PositiveInt | None = None  # turn prompt + answer cap; default: the plan's context, else the server's
    slo: SloSpec | None = None
    reset_prefix_cache: bool = False

    @model_validator(mode="before")
    @classmethod
    def _drop_placeholder_keys(cls, data: Any) -> Any:
        """Plans written while the workload was a placeholder said ``implemented: false`` and a note."""
        if isinstance(data, dict) and data.get("implemented") is False:
            data = {k: v for k, v in data.items() if k not in ("implemented", "note")}
        return data

    @model_validator(mode="after")
    def _trace_has_no_sessions(self) -> AgenticWorkload:
        if isinstance(self.source, TraceSource):
            fields = type(self).model_fields
            given = [
                k
                for k in ("concurrencies", "sessions", "warmup_sessions")
                if getattr(self, k) != fields[k].get_default(call_default_factory=True)
            ]
            if given:
                raise ValueError(
                    f"a trace replays on its own schedule: {', '.join(sorted(given))} apply to synthetic "
                    "sessions only (a trace's load is source.speedups)"
                )
        return self


Workload = Annotated[
    BatchWorkload | ConcurrencyWorkload | RateWorkload | AgenticWorkload,
    Field(discriminator="kind"),
]


class EvalSpec(Strict):
    """One accuracy task run on every (or the named) server with the same K seeds."""

    task: str
    limit: PositiveInt | None = None  # first N items; None = the whole set
    passes: PositiveInt = 1  # K; pass k uses Plan.seeds[k]
    margin: float | None = Field(default=None, gt=0)  # equivalence margin in score points (0-100)
    servers: list[str] | None = None
    # task-level overrides of lm-eval's generation settings; the task's prompt reserve + max_gen_toks must fit
    # each server's max_model_len, else the eval is refused (never run with shorter answers)
    gen_kwargs: dict[str, Any] = Field(default_factory=dict)
    num_concurrent: PositiveInt | None = None  # null: what the server says it can hold (byog.evals.capacity)
    # points: the score the plan expects of the baseline on this model (like vLLM CI's accuracy
    # floors); a baseline below it makes the verdict "degenerate" (byog.analysis.degenerate)
    min_baseline_score: float | None = Field(default=None, ge=0, le=100)
    # group-sequential gate (docs/statistics.md §1a): the fractions of the limit at which the paired test
    # looks (the later server stops where it decides), increasing and ending at 1 (e.g. [0.5, 0.75, 1.0]),
    # at most 20; None: one look, at every item
    looks: list[float] | None = Field(default=None, max_length=20)
    spending: Literal["obf", "pocock"] = "obf"  # Lan-DeMets spending: O'Brien-Fleming or Pocock type
    # operating points the accuracy claim lives at (docs/statistics.md §1b), e.g. [1, 64]: the eval's items
    # are split into strata by a seeded hash of each item (byog.analysis.strata), each stratum sent at
    # num_concurrent = its point on every server, and the verdict says per stratum whether the servers
    # agree and whether their difference depends on the point; None (the default): every item at one
    # concurrency (num_concurrent, else the server's capacity)
    operating_points: list[PositiveInt] | None = Field(default=None, min_length=2, max_length=4)

    @model_validator(mode="after")
    def _operating_points_planned(self) -> EvalSpec:
        points = self.operating_points
        if points is not None and len(set(points)) != len(points):
            raise ValueError(f"operating_points must be distinct (got {points})")
        if points is not None and self.looks is not None:
            raise ValueError("operating_points and looks cannot be combined: the looks would cut the strata unevenly")
        if points is not None and self.num_concurrent is not None:
            raise ValueError("operating_points set the concurrency of every item: leave num_concurrent out")
        return self

    @model_validator(mode="after")
    def _looks_planned(self) -> EvalSpec:
        looks = self.looks
        if looks is not None and (
            not looks
            or any(b <= a for a, b in zip(looks, looks[1:], strict=False))
            or looks[0] <= 0
            or looks[-1] != 1.0
        ):
            raise ValueError(f"looks must increase within (0, 1] and end at 1.0 (got {looks})")
        return self


class NumericsTolerance(Strict):
    """The numerics verdict's knobs (``byog.analysis.numerics`` and docs/numerics.md say how each is used)."""

    envelope_factor: float = Field(default=2.0, ge=1.0)  # envelope = max(factor x A/A, floor)
    floor_abs_dlogprob: float = Field(default=1e-3, ge=0)  # nats: mean |Δ logprob| never counts as drift below this
    floor_kl: float = Field(default=1e-5, ge=0)  # nats: mean KL never counts as drift below this
    diverge_kl: float = Field(default=0.1, gt=0)  # nats: a bucket's mean KL above this diverges
    min_bucket_positions: PositiveInt = 16  # thinner buckets are reported, not judged
    # the baseline is insensitive when, at the median position, its top-1 token is at most this much
    # more likely than its k-th (a uniform next-token distribution, as random weights give, has 1.0)
    flat_head_ratio: float = Field(default=1.05, ge=1.0)

    def floor(self, metric: str) -> float:
        return {"mean_abs_dlogprob": self.floor_abs_dlogprob, "mean_kl": self.floor_kl}[metric]


class StockVariant(Strict):
    """A custom change to the baseline's launch: ``args`` appended to its vLLM arguments (the last value
    of a flag wins, as in vLLM's parser), ``env`` merged over its environment. A plan normally names a
    change from byog's menu instead (``byog.plans.numerics_menu``)."""

    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


# A change to the baseline's launch: a name from byog's menu (``fp16``, ``fp8-kv``, ``rope-theta``,
# ``eager``, ``chunked-N``; checked when the plan loads) or a custom change written out.
StockChange = str | StockVariant


class NumericsSpec(Strict):
    """The numerics differential and conformance suite, run on every server of every comparison pair.

    Prompts: ``random_prompts`` random-id prompts of ``random_isl`` tokens, ``dataset_prompts``
    real-text prompts of ``dataset_isl`` tokens, and one real-text prompt per entry of
    ``contexts`` whose generated tokens end at that context length. ``control`` and
    ``envelope_variant`` are changes to each baseline's launch that byog runs beside it, named from
    byog's menu (``byog.plans.numerics_menu``, ``byog.plans.numerics_roles``, docs/numerics.md).
    """

    random_prompts: NonNegativeInt = 4
    random_isl: PositiveInt = 128
    dataset: Literal["mt_bench", "gsm8k"] = "gsm8k"
    dataset_prompts: NonNegativeInt = 2
    dataset_isl: PositiveInt = 256
    contexts: list[PositiveInt] = Field(default_factory=list)  # e.g. [1024, 8192, 32768]
    max_tokens: PositiveInt = 32  # greedy tokens generated per prompt
    top_k: int = Field(default=5, ge=5, le=20)  # vLLM's default --max-logprobs is 20
    seed: int = 0
    conformance: bool | list[str] = True  # or only these servers (a candidate is held to its baseline's)
    tolerance: NumericsTolerance = Field(default_factory=NumericsTolerance)
    # the sensitivity control: a change of known size to the baseline that must land beyond the envelope;
    # None: byog's default for the platform the baseline runs on (byog.plans.numerics_menu)
    control: StockChange | None = None
    # the stock variant whose distance from the baseline sets the implementation-noise envelope
    envelope_variant: StockChange = "eager"


class ComparisonPair(Strict):
    """One candidate held against one baseline (e.g. TP16 candidate vs TP16 stock).

    ``differs_in`` declares what the pair differs in on purpose (launch facts as ``byog verify``
    names them: ``--enforce-eager``, ``additional_config.decode_backend``, ``weights``); a pair
    differing in hardware, GPUs, weights or tokenizer fails verify unless declared here, and the
    report's headline then says so. ``baseline_is_stock: false`` says the baseline is not a
    stock launch, which the report says too.
    """

    candidate: str
    baseline: str
    differs_in: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    baseline_is_stock: bool = True
    # both servers start once with vLLM's sleep mode and stay up; each bench point is measured in an
    # ABBA order of waves, one sleeping while the other runs (byog.pipeline.interleave)
    interleave: bool = False
    # interleaved: warm-up waves after every wake before the visit's measured wave (docs/interleave.md)
    wake_warmup_waves: int = Field(default=1, ge=0, le=20)
    # the isolation pair of a PR behind a switch: stock at the merge base vs the PR with its switch off,
    # expected to show no measurable change (``byog init`` plans it; the first screen says what it found)
    isolation: bool = False


class Plan(Strict):
    schema_version: Literal[4] = PLAN_SCHEMA_VERSION
    name: str
    description: str = ""
    model: ModelSpec
    servers: dict[str, ServerConfig] = Field(min_length=1)
    baseline: str  # the server every other server is compared against, unless `pairs` says otherwise
    pairs: list[ComparisonPair] | None = None  # explicit pairs; default: every other server vs `baseline`
    workloads: list[Workload] = Field(default_factory=list)
    evals: list[EvalSpec] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=lambda: [1234], min_length=1)
    # R independent launches of every server with bench points; each launch's bench points are kept
    # apart and the perf CIs become the launch t interval over them (byog.analysis.perf_equivalence).
    # Evals run on the first launch only, so a server with evals only is launched once.
    launches: PositiveInt = 1
    # launch the baseline at least twice (an A/A pair): its first two launches calibrate the
    # margin of the per-point perf labels (faster / slower / equivalent / within noise)
    aa_pair: bool = False
    numerics: NumericsSpec | None = None  # the token-level differential + conformance suite (docs/numerics.md)
    # A bench point invalid only for a transient cause (client saturated, GPU clocks slowed) is
    # measured again, at most this many times, once the cause has cleared (byog.analysis.validity).
    remeasure: NonNegativeInt = 2

    @model_validator(mode="after")
    def _references(self) -> Plan:
        self._check_server_names()
        self._check_workloads_and_evals()
        self._check_interleaved()
        if self.numerics is not None:
            self._check_numerics(self.numerics)
        return self

    def _check_server_names(self) -> None:
        """Every server a pair, workload or eval names is defined."""
        if self.baseline not in self.servers:
            raise ValueError(f"baseline '{self.baseline}' is not one of the servers {sorted(self.servers)}")
        for pair in self.pairs or []:
            for server in (pair.candidate, pair.baseline):
                if server not in self.servers:
                    raise ValueError(f"pair server '{server}' is not defined under 'servers'")
        for item in [*self.workloads, *self.evals]:
            for server in item.servers or []:
                if server not in self.servers:
                    raise ValueError(f"server '{server}' is not defined under 'servers'")

    def _check_workloads_and_evals(self) -> None:
        names: set[str] = set()
        interleaved = {s for pair in self.interleaved_pairs for s in pair}
        for workload in self.workloads:
            name = workload.name or workload.kind
            if name in names:
                raise ValueError(f"two workloads are named '{name}': give each a unique 'name'")
            names.add(name)
            if workload.launches is not None and workload.launches > self.launches:
                raise ValueError(
                    f"workload '{name}' asks for {workload.launches} launches but the plan has {self.launches}: "
                    "a workload runs on at most the plan's launches"
                )
            if workload.launches is not None and interleaved & set(self.servers_for(workload)):
                raise ValueError(
                    f"workload '{name}' sets its own launches on a server of an interleaved pair, which launches "
                    "both servers together for every point: leave 'launches' to the plan"
                )
        for spec in self.evals:
            if spec.passes > len(self.seeds):
                raise ValueError(
                    f"eval '{spec.task}' asks for {spec.passes} passes but only {len(self.seeds)} seeds are listed"
                )

    def _check_interleaved(self) -> None:
        interleaved = [s for c, b in self.interleaved_pairs for s in (c, b)]
        if len(set(interleaved)) != len(interleaved):
            raise ValueError("a server can be in one interleaved pair only (interleave: true)")
        if interleaved and self.aa_pair and self.launches < 2:
            # both servers of the pair are up together, so they are launched together, R times each
            raise ValueError(
                "an interleaved pair launches both servers together: set 'launches: 2' or more (its A/A margin "
                "comes with it) instead of 'aa_pair'"
            )
        for name in interleaved:
            config = self.servers[name]
            if not config.interleaves or config.multi_node:
                kinds = " or ".join(n for n, c in SERVER_CONFIGS.items() if c.interleaves)
                raise ValueError(f"server '{name}' of an interleaved pair must be a single-node {kinds} server")

    def _check_numerics(self, numerics: NumericsSpec) -> None:
        # a candidate is scored on its baseline's token path: one baseline each, and no chains
        baselines: dict[str, str] = {}
        for candidate, baseline in self.comparisons:
            if baselines.setdefault(candidate, baseline) != baseline:
                raise ValueError(f"numerics: server '{candidate}' is a candidate of two baselines; pair it with one")
        if isinstance(numerics.conformance, list):
            for server in numerics.conformance:
                if server not in self.servers:
                    raise ValueError(f"numerics.conformance names '{server}', which is not defined under 'servers'")
                if baselines.get(server, server) not in numerics.conformance:
                    raise ValueError(
                        f"numerics.conformance lists the candidate '{server}' without its baseline "
                        f"'{baselines[server]}', to which it is held"
                    )
        for candidate in baselines:
            if candidate in baselines.values():
                raise ValueError(
                    f"numerics: server '{candidate}' is both a candidate and a baseline; "
                    "compare each candidate with a stock baseline directly"
                )

    @property
    def comparisons(self) -> list[tuple[str, str]]:
        """(candidate, baseline) pairs, in plan order."""
        if self.pairs is not None:
            return [(pair.candidate, pair.baseline) for pair in self.pairs]
        return [(name, self.baseline) for name in self.servers if name != self.baseline]

    @property
    def comparison_pairs(self) -> list[ComparisonPair]:
        """The pairs as declared, or the default pairs (nothing declared) when the plan names none."""
        if self.pairs is not None:
            return list(self.pairs)
        return [ComparisonPair(candidate=c, baseline=b) for c, b in self.comparisons]

    @property
    def interleaved_pairs(self) -> list[tuple[str, str]]:
        """(candidate, baseline) of every pair with ``interleave: true``, in plan order."""
        return [(p.candidate, p.baseline) for p in self.pairs or [] if p.interleave]

    def launches_of(self, server: str) -> int:
        """How many times ``server`` is launched: as often as its workloads measure on it (``workload_launches``);
        once for a server no workload measures (outside an interleaved pair): a later launch would run nothing."""
        interleaved = {s for pair in self.interleaved_pairs for s in pair}
        if server in interleaved:
            return self.most_launches(server)
        return max(
            (self.workload_launches(w, server) for w in self.workloads if server in self.servers_for(w)), default=1
        )

    def workload_launches(self, workload: Workload, server: str) -> int:
        """On how many launches of ``server`` the workload's points run: its own ``launches``, else the server's
        (R, and at least 2 for the baseline of an A/A pair)."""
        own = self.most_launches(server)
        return own if workload.launches is None else min(workload.launches, own)

    def point_launches(self, workload_name: str, server: str) -> int:
        """On how many launches of ``server`` the points of the workload named ``workload_name`` run."""
        for w in self.workloads:
            if (w.name or w.kind) == workload_name:
                return self.workload_launches(w, server)
        return self.most_launches(server)  # no workload of this name: the server's launches

    def measured_on(self, workload_name: str, server: str, launch: int) -> bool:
        """Whether launch ``launch`` of ``server`` runs the points of the workload named ``workload_name``."""
        return launch <= self.point_launches(workload_name, server)

    def most_launches(self, server: str) -> int:
        """The server's launches before its workloads' own counts: R, and at least 2 for an A/A baseline."""
        if self.aa_pair and server in {baseline for _, baseline in self.comparisons} | {self.baseline}:
            return max(self.launches, 2)
        return self.launches

    @property
    def candidates(self) -> list[str]:
        return list(dict.fromkeys(candidate for candidate, _ in self.comparisons))

    def servers_for(
        self, item: BatchWorkload | ConcurrencyWorkload | RateWorkload | AgenticWorkload | EvalSpec
    ) -> list[str]:
        return list(item.servers or self.servers)


_HOLDS_SERVERS.append(Plan)
register("plan", Plan, version=PLAN_SCHEMA_VERSION, files=("plan.yaml",), kind="yaml")
