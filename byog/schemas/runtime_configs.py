"""The servers under test: one config class per runtime, registered under its ``runtime`` name.

``ServerConfig`` (a plan's server) is the union of the registered classes, told apart by their
``runtime`` tag; each class answers the facts the rest of byog asks of a server (``ServerBase``'s
methods and class variables), so nothing else tests a runtime's class or name. A runtime's
behaviour (launch, planned command line) is its ``byog.runtimes`` module's (``runtimes/registry.py``).
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    NonNegativeInt,
    PositiveInt,
    TypeAdapter,
    model_validator,
)
from pydantic_core import CoreSchema, core_schema

from byog.core.argv import arg_value
from byog.core.errors import UsageError
from byog.schemas.base import Strict

DEFAULT_RUNTIME: Final = "local"
LOCAL_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})

# runtime name -> its server config class; a plan's ``servers`` accept exactly these (``register_server_config``)
SERVER_CONFIGS: dict[str, type[ServerBase]] = {}
_HOLDS_SERVERS: list[type[Strict]] = []  # models whose schema holds ServerConfig (rebuilt on a registration)
Config = TypeVar("Config", bound="ServerBase")


def register_server_config(cls: type[Config]) -> type[Config]:
    """Make ``cls`` the config of the runtime its ``runtime`` field names: a plan's server may then name it.

    A runtime is this class (its fields and the facts the rest of byog asks: ``ServerBase``'s methods)
    plus its behaviour in a ``byog.runtimes`` module (``byog.runtimes.registry.register_runtime``).
    Registering after ``Plan`` exists rebuilds the models whose schema holds the union.
    """
    name = cls.model_fields["runtime"].default
    if not isinstance(name, str) or name in SERVER_CONFIGS and SERVER_CONFIGS[name] is not cls:
        raise ValueError(f"{cls.__name__}: 'runtime' needs a default naming a runtime not yet registered ({name!r})")
    SERVER_CONFIGS[name] = cls
    if "_server_adapter" in globals():  # registered after this module's own classes
        _server_adapter.cache_clear()
    for model in _HOLDS_SERVERS:
        model.model_rebuild(force=True)
    return cls


def runtime_names() -> list[str]:
    return list(SERVER_CONFIGS)


def _runtime_of(value: Any) -> Any:
    """The tag of a server as written: its ``runtime``, ``local`` when it names none."""
    if isinstance(value, dict):
        return value.get("runtime", DEFAULT_RUNTIME)
    return getattr(value, "runtime", DEFAULT_RUNTIME)


class ServerBase(Strict):
    """What every server under test is, launched by byog or not: vLLM's own settings. An endpoint's
    are what it was started with, which byog reads to plan (context, ``--max-num-seqs``, TP)."""

    args: list[str] = Field(default_factory=list)  # extra `vllm serve` arguments, verbatim
    tensor_parallel_size: PositiveInt = 1
    data_parallel_size: PositiveInt = 1
    decode_context_parallel_size: PositiveInt = 1
    additional_config: dict[str, Any] | None = None  # vLLM --additional-config (e.g. the decode switch)
    speculative_config: dict[str, Any] | None = None  # vLLM --speculative-config

    # What the rest of byog asks of a server config, answered by its class (a runtime's facts, one home each;
    # its behaviour, launch and planned command line, is its byog.runtimes module's).
    if TYPE_CHECKING:  # each config class declares its own (a Literal, its registry tag)
        runtime: str
    runs_this_hosts_vllm: ClassVar[bool] = False  # this host's vLLM install: its sleep-mode and CPU-build facts apply
    runs_host_python: ClassVar[bool] = False  # a maintainer's --python applies (not an image's interpreter)
    article: ClassVar[str] = "a"  # "a local server", "an endpoint server"
    vllm_is: ClassVar[str] = "where it runs"  # where the vLLM that parses its arguments lives (byog plan's notes)
    runs_in_a_slurm_job: ClassVar[bool] = False  # byog runs inside a Slurm allocation (``byog slurm submit``)
    interleaves: ClassVar[bool] = False  # one node byog starts on this host, so vLLM's sleep mode can swap it

    @property
    def multi_node(self) -> bool:
        return False

    @property
    def speculative(self) -> bool:
        return self.speculative_config is not None

    def world_size(self) -> int:
        """GPUs (or CPU ranks) one server uses: TP x PP x DP; PP is read from the server's args."""
        pp = int(arg_value(list(self.args), "--pipeline-parallel-size") or arg_value(list(self.args), "-pp") or 1)
        return self.tensor_parallel_size * pp * self.data_parallel_size

    def launched(self) -> LaunchedConfig | None:
        """This config as one byog launches, or None (an endpoint: already running)."""
        return None

    def elsewhere(self) -> str | None:
        """Why this machine's NVML does not see the server's GPUs (it runs elsewhere), or None."""
        return None

    def gpu_indices(self) -> list[int] | None:
        """The GPUs the server runs on, for the NVML sampler; None: every GPU NVML sees (or unknown)."""
        return None

    def image_ref(self) -> str | None:
        """The container image the server runs, or None (this host's or a node's install)."""
        return None

    def reproduced_as(self, name: str, allowed_image_digests: Collection[str], digests_hint: str) -> dict[str, str]:
        """Where byog reproduce runs this bundle server when the maintainer names no runtime: its runtime fields
        (``digests_hint``: where the maintainer allows an image digest, for the refusal)."""
        del name, allowed_image_digests, digests_hint
        return {"runtime": DEFAULT_RUNTIME}


def _names_its_runtime(schema: dict[str, Any]) -> None:
    """In the JSON schema, a server of any runtime but ``local`` (a plan's default) names it: one branch matches."""
    schema["required"] = [*schema.get("required", []), "runtime"]


@register_server_config
class EndpointConfig(ServerBase):
    """An already-running server at ``url``: byog launches nothing."""

    model_config = ConfigDict(json_schema_extra=_names_its_runtime)

    runtime: Literal["endpoint"] = "endpoint"
    url: str
    article: ClassVar[str] = "an"

    def elsewhere(self) -> str | None:
        if urlsplit(self.url).hostname in LOCAL_HOSTS:
            return None
        return f"the server runs elsewhere ({self.url}): this machine's GPUs are not its GPUs"


class LaunchedConfig(ServerBase):
    """A server byog launches. It may span several nodes (``nodes: N``): N copies of vLLM cooperating
    on one model, each a share of TP x PP x DP, started through the node runtime (local process
    groups on this machine, docker containers, hosts reached over ssh, or slurm steps of the
    allocation byog runs in) by one of vLLM's launchers (``launcher``: ``native`` =
    ``--nnodes/--node-rank/--master-addr``, or ``ray``).
    """

    runtime: str
    env: dict[str, str] = Field(default_factory=dict)
    startup_timeout_s: float = Field(default=900.0, gt=0)
    # --- multi-node (nodes > 1) ---
    nodes: PositiveInt = 1
    launcher: Literal["native", "ray"] = "native"
    # GPUs each node uses (CUDA_VISIBLE_DEVICES, or the container's device request); nodes sharing a
    # host get disjoint ranges. Unset: TP x PP x DP / nodes, and none for a CPU build.
    gpus_per_node: NonNegativeInt | None = None
    # The Python that runs vLLM (on every node): an interpreter's path or a venv's directory, where the
    # server runs. Default: byog's own (an image's python3). byog need not be installed in it.
    python: str | None = Field(default=None, min_length=1)
    ray_args: list[str] = Field(default_factory=list)  # extra `ray start` arguments on every node
    # Set by a runtime that runs multi-node servers only: why it needs ``nodes``.
    multi_node_only: ClassVar[str | None] = None

    @model_validator(mode="after")
    def _node_fields(self) -> LaunchedConfig:
        if self.multi_node_only is not None and self.nodes < 2:
            raise ValueError(self.multi_node_only)
        if self.nodes == 1 and (self.launcher != "native" or self.gpus_per_node is not None):
            raise ValueError("'launcher' and 'gpus_per_node' are for multi-node servers: set 'nodes' too")
        return self

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1

    def launched(self) -> LaunchedConfig | None:
        return self

    def gpu_indices(self) -> list[int] | None:
        """The ids in the server env's ``CUDA_VISIBLE_DEVICES``, when it names them."""
        visible = self.env.get("CUDA_VISIBLE_DEVICES")
        ids = [part.strip() for part in (visible or "").split(",") if part.strip()]
        return [int(part) for part in ids] if ids and all(part.isdigit() for part in ids) else None


@register_server_config
class LocalConfig(LaunchedConfig):
    """vLLM as process groups on this machine (one per node)."""

    runtime: Literal["local"] = "local"
    interleaves: ClassVar[bool] = True
    runs_this_hosts_vllm: ClassVar[bool] = True
    runs_host_python: ClassVar[bool] = True


class HostedConfig(LaunchedConfig):
    """A launched server whose nodes may run elsewhere, one ``hosts`` entry per node, rank 0 (the API
    server, the Ray head) first."""

    model_config = ConfigDict(json_schema_extra=_names_its_runtime)
    hosts: list[str] = Field(default_factory=list)
    hosts_required: ClassVar[bool] = False

    @model_validator(mode="after")
    def _one_host_per_node(self) -> HostedConfig:
        if self.hosts_required and len(self.hosts) != self.nodes:
            raise ValueError(
                f"'{self.runtime}' needs one 'hosts' entry per node: {self.nodes} nodes, {len(self.hosts)} hosts"
            )
        if self.hosts and len(self.hosts) != self.nodes:
            raise ValueError(f"{self.nodes} nodes but {len(self.hosts)} 'hosts': one per node, rank 0 first")
        return self

    def _reached(self) -> str:
        """How the hosts are reached, as the refusal to run them says (ssh: its options)."""
        return ""

    def elsewhere(self) -> str | None:
        if not self.hosts:
            return None
        return f"the server runs on other hosts ({', '.join(self.hosts)}): NVML here does not see their GPUs"

    def reproduced_as(self, name: str, allowed_image_digests: Collection[str], digests_hint: str) -> dict[str, str]:
        if not self.hosts:
            return super().reproduced_as(name, allowed_image_digests, digests_hint)
        raise UsageError(
            f"server '{name}' of the bundle runs on other hosts ({', '.join(self.hosts)}){self._reached()}; "
            "byog reproduce runs "
            f"nothing remote that you did not name: pass --host {name}=HOST for each of its {self.nodes} nodes, or "
            "leave it out with --server"
        )


Platform = Literal["linux/amd64", "linux/arm64"]


@register_server_config
class DockerConfig(HostedConfig):
    """vLLM in ``image``; ``hosts``: Docker engines (ssh://user@host), default this machine's."""

    vllm_is: ClassVar[str] = "in its image"

    runtime: Literal["docker"] = "docker"
    interleaves: ClassVar[bool] = True
    image: str  # pinned by digest in real runs
    # The image's platform; a node of another architecture is refused before anything starts.
    platform: Platform | None = None
    # GPUs to request: "all", "none", or device ids; unset = all for a GPU image, none for a CPU one
    gpus: Literal["all", "none"] | list[NonNegativeInt] | None = None

    def gpu_indices(self) -> list[int] | None:
        return list(self.gpus) if isinstance(self.gpus, list) else super().gpu_indices()

    def image_ref(self) -> str | None:
        return self.image

    def reproduced_as(self, name: str, allowed_image_digests: Collection[str], digests_hint: str) -> dict[str, str]:
        if self.hosts:
            return super().reproduced_as(name, allowed_image_digests, digests_hint)
        digest = self.image.rsplit("@", 1)[1] if "@sha256:" in self.image else None
        if digest is None or digest not in allowed_image_digests:
            raise UsageError(
                f"server '{name}' of the bundle runs image '{self.image}', which is not pinned by a digest you "
                f"allow; pass --image {name}=IMAGE, or add its digest to {digests_hint}"
            )
        return {"runtime": "docker", "image": self.image}


@register_server_config
class SshConfig(HostedConfig):
    """A multi-node server on ``hosts``: ssh destinations (user@host, ssh://user@host:port)."""

    vllm_is: ClassVar[str] = "on its nodes"

    runtime: Literal["ssh"] = "ssh"
    ssh_options: list[str] = Field(default_factory=list)  # extra `ssh` options, e.g. ["-i", "~/.ssh/tray"]
    hosts_required: ClassVar[bool] = True
    runs_host_python: ClassVar[bool] = True
    article: ClassVar[str] = "an"

    def _reached(self) -> str:
        return f" with ssh options {' '.join(self.ssh_options)}" if self.ssh_options else ""

    multi_node_only: ClassVar[str | None] = (
        "the 'ssh' runtime runs multi-node servers: set 'nodes' (and one 'hosts' entry per node)"
    )


@register_server_config
class SlurmConfig(HostedConfig):
    """A multi-node server as srun steps of the allocation byog runs in; ``hosts``: Slurm node names
    (default: the allocation's first N)."""

    vllm_is: ClassVar[str] = "in its image or on its nodes"

    runtime: Literal["slurm"] = "slurm"
    runs_in_a_slurm_job: ClassVar[bool] = True
    image: str | None = None  # the steps' container (Pyxis)
    platform: Platform | None = None
    multi_node_only: ClassVar[str | None] = (
        "the 'slurm' runtime runs multi-node servers as srun steps: set 'nodes' "
        "(a one-node server runs as 'local' or 'docker' inside the job)"
    )

    def elsewhere(self) -> str | None:
        return "the server runs as srun steps on the Slurm job's nodes: NVML here does not see their GPUs"

    def image_ref(self) -> str | None:
        return self.image


class _RegisteredServers:
    """The pydantic schema of a server: the union of the registered config classes, by their ``runtime`` tag,
    so a field another runtime takes (``image`` on a local server, ``nodes`` on an endpoint) is an error naming it."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        del source
        return core_schema.tagged_union_schema(
            {name: handler.generate_schema(cls) for name, cls in SERVER_CONFIGS.items()},
            _runtime_of,
            custom_error_type="runtime",
            custom_error_message=f"'runtime' is one of {', '.join(SERVER_CONFIGS)}",
        )


# One server under test (its name is its key in ``Plan.servers``).
if TYPE_CHECKING:
    ServerConfig = EndpointConfig | LaunchedConfig
else:
    ServerConfig = Annotated[ServerBase, _RegisteredServers()]


@cache
def _server_adapter() -> TypeAdapter[ServerConfig]:
    return TypeAdapter(ServerConfig)


def server_config(**fields: Any) -> ServerConfig:
    """The server ``fields`` describe, of the class its ``runtime`` (default ``local``) names."""
    adapter: TypeAdapter[ServerConfig] = _server_adapter()
    return adapter.validate_python(fields)
