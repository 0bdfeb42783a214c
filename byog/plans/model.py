"""The Plan: which servers to launch, which workloads and evals to run on each, and how to compare.

A plan is pure data (pydantic, ``extra="forbid"`` everywhere so a misspelt key is an error that
names the key). Expanding a plan into concrete bench points lives in ``byog.plans.expand``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, NonNegativeInt, model_validator

PLAN_SCHEMA_VERSION = 1

BUILTIN_MODEL = "builtin:smollm2-135m-instruct"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSpec(_Strict):
    """What every server serves. ``path`` is a local HF directory, a hub id, or ``builtin:...``."""

    path: str
    served_name: str | None = None
    tokenizer: str | None = None
    max_model_len: PositiveInt | None = None


class ServerConfig(_Strict):
    """One server under test. Its name is its key in ``Plan.servers``."""

    runtime: Literal["local", "docker", "endpoint"] = "local"
    image: str | None = None  # docker runtime: image reference (pinned by digest in real runs)
    # docker runtime: GPUs to request: "all", "none", or device ids; unset = all for a GPU image, none for a CPU one
    gpus: Literal["all", "none"] | list[NonNegativeInt] | None = None
    url: str | None = None  # endpoint runtime: an already-running server
    args: list[str] = Field(default_factory=list)  # extra `vllm serve` arguments, verbatim
    env: dict[str, str] = Field(default_factory=dict)
    tensor_parallel_size: PositiveInt = 1
    data_parallel_size: PositiveInt = 1
    decode_context_parallel_size: PositiveInt = 1
    additional_config: dict[str, Any] | None = None  # vLLM --additional-config (e.g. the decode switch)
    speculative_config: dict[str, Any] | None = None  # vLLM --speculative-config
    startup_timeout_s: float = Field(default=900.0, gt=0)

    @model_validator(mode="after")
    def _runtime_fields(self) -> "ServerConfig":
        if self.runtime == "endpoint" and not self.url:
            raise ValueError("an 'endpoint' server needs 'url'")
        if self.runtime == "docker" and not self.image:
            raise ValueError("a 'docker' server needs 'image'")
        return self

    @property
    def speculative(self) -> bool:
        return self.speculative_config is not None


class RandomPrompts(_Strict):
    """Random token ids of exactly ISL tokens, checked with the server's /tokenize."""

    kind: Literal["random"] = "random"


class DatasetPrompts(_Strict):
    """Real prompts from a dataset (MT-Bench, GSM8K), truncated/padded to ISL tokens."""

    kind: Literal["dataset"] = "dataset"
    dataset: Literal["mt_bench", "gsm8k"]


Prompts = Annotated[Union[RandomPrompts, DatasetPrompts], Field(discriminator="kind")]


class _WorkloadBase(_Strict):
    name: str | None = None  # defaults to the kind; must be unique within a plan
    servers: list[str] | None = None  # default: every server
    isl: list[PositiveInt] = Field(min_length=1)
    osl: list[PositiveInt] = Field(min_length=1)
    prompts: Prompts = Field(default_factory=RandomPrompts)
    api: Literal["completions", "chat"] = "completions"
    reset_prefix_cache: bool = False


class BatchWorkload(_WorkloadBase):
    """Exactly B requests start together; W warm-up waves, then R measured waves."""

    kind: Literal["batch"] = "batch"
    batch_sizes: list[PositiveInt] = Field(min_length=1)
    warmup_waves: NonNegativeInt = 1
    waves: PositiveInt = 3


class ConcurrencyWorkload(_WorkloadBase):
    """Closed loop: C requests in flight until N prompts are done."""

    kind: Literal["concurrency"] = "concurrency"
    concurrencies: list[PositiveInt] = Field(min_length=1)
    num_prompts: PositiveInt
    warmup_prompts: NonNegativeInt = 0


class RateWorkload(_WorkloadBase):
    """Open loop: Poisson arrivals at each rate (requests/s), seeded."""

    kind: Literal["rate"] = "rate"
    rates: list[Annotated[float, Field(gt=0)]] = Field(min_length=1)
    num_prompts: PositiveInt
    seed: int = 0


class AgenticWorkload(_Strict):
    """Multi-turn trace replay with tool pauses: named so a plan can say it wants it, not built yet."""

    kind: Literal["agentic"] = "agentic"
    name: str | None = None
    servers: list[str] | None = None
    concurrencies: list[PositiveInt] = Field(default_factory=lambda: [1])
    implemented: Literal[False] = False
    note: str = "not implemented: byog has no agentic trace-replay workload yet"


Workload = Annotated[
    Union[BatchWorkload, ConcurrencyWorkload, RateWorkload, AgenticWorkload],
    Field(discriminator="kind"),
]


class EvalSpec(_Strict):
    """One accuracy task run on every (or the named) server with the same K seeds."""

    task: str
    limit: PositiveInt | None = None  # first N items; None = the whole set
    passes: PositiveInt = 1  # K; pass k uses Plan.seeds[k]
    margin: float | None = Field(default=None, gt=0)  # equivalence margin in score points (0-100)
    servers: list[str] | None = None
    gen_kwargs: dict[str, Any] = Field(default_factory=dict)  # task-level overrides
    num_concurrent: PositiveInt = 8


class ComparisonPair(_Strict):
    """One candidate held against one baseline (e.g. TP16 candidate vs TP16 stock)."""

    candidate: str
    baseline: str


class Plan(_Strict):
    schema_version: Literal[1] = PLAN_SCHEMA_VERSION
    name: str
    description: str = ""
    model: ModelSpec
    servers: dict[str, ServerConfig] = Field(min_length=1)
    baseline: str  # the server every other server is compared against, unless `pairs` says otherwise
    pairs: list[ComparisonPair] | None = None  # explicit pairs; default: every other server vs `baseline`
    workloads: list[Workload] = Field(default_factory=list)
    evals: list[EvalSpec] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=lambda: [1234], min_length=1)

    @model_validator(mode="after")
    def _references(self) -> "Plan":
        if self.baseline not in self.servers:
            raise ValueError(f"baseline '{self.baseline}' is not one of the servers {sorted(self.servers)}")
        for pair in self.pairs or []:
            for server in (pair.candidate, pair.baseline):
                if server not in self.servers:
                    raise ValueError(f"pair server '{server}' is not defined under 'servers'")
        names: set[str] = set()
        for item in [*self.workloads, *self.evals]:
            for server in item.servers or []:
                if server not in self.servers:
                    raise ValueError(f"server '{server}' is not defined under 'servers'")
        for workload in self.workloads:
            name = workload.name or workload.kind
            if name in names:
                raise ValueError(f"two workloads are named '{name}': give each a unique 'name'")
            names.add(name)
        for spec in self.evals:
            if spec.passes > len(self.seeds):
                raise ValueError(f"eval '{spec.task}' asks for {spec.passes} passes but only {len(self.seeds)} seeds are listed")
        return self

    @property
    def comparisons(self) -> list[tuple[str, str]]:
        """(candidate, baseline) pairs, in plan order."""
        if self.pairs is not None:
            return [(pair.candidate, pair.baseline) for pair in self.pairs]
        return [(name, self.baseline) for name in self.servers if name != self.baseline]

    @property
    def candidates(self) -> list[str]:
        return list(dict.fromkeys(candidate for candidate, _ in self.comparisons))

    def servers_for(self, item: Union[BatchWorkload, ConcurrencyWorkload, RateWorkload, AgenticWorkload, EvalSpec]) -> list[str]:
        return list(item.servers or self.servers)
