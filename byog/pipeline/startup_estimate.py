"""``byog plan``'s start-up and eval estimates, in parts a reader can check.

Start-up of one server = weights per rank / load rate + torch.compile + CUDA graph capture + the
rest of vLLM's start (process, profile run, KV cache, API server). With ``--from-run`` each part
is read from that run's server logs, where vLLM states them ("Model loading took X GiB and Y
seconds", "torch.compile took S s in total", "Graph capturing finished in S secs"), and the rest
is its ready time minus those; the same server's figures when it ran there, else the median over
the run's servers. Without one the rate is a stated default per storage class and the other parts
are stated guesses. An eager server (``--enforce-eager``) compiles and captures nothing.

A relaunch of the same server (``launches: 2`` and up) is charged its own figure, ``restart_s``:
the first start's parts, with torch.compile at the measured warm-cache share where vLLM's compile
cache outlives the launch (a process on the host or nodes: vLLM's cache directory stays there), and
cold where it does not (a container: a fresh filesystem each launch). The weights are charged the
cold read again: whether the page cache still holds them (node memory, the filesystem's client
cache, what ran in between) is unknown here. CUDA graphs are captured again at every start. With
``--from-run`` of a run that relaunched its servers, each relaunch's parts are read from its own log
(``servers/<name>/launch-<r>/``): measured, page cache and compile cache as they were there.

The evals' estimate is ``byog.pipeline.plan_rates``.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import TypedDict

from byog.core.io import read_json
from byog.core.paths import LAUNCH_PREFIX, RunDir
from byog.runtimes.sleep_mode import weights_bytes
from byog.schemas.plan import Plan, ServerConfig
from byog.schemas.runtime_configs import LaunchedConfig

GB = 1e9
GIB = 2**30
# Read rate of one node, per storage class (a stated default, not a measurement): a local NVMe
# drive streams ~2 GB/s of safetensors; a shared network filesystem gives one node ~1 GB/s.
STORAGE_RATE_GB_S = {"local disk": 2.0, "shared filesystem": 1.0}
COMPILE_GUESS_S = 60.0  # torch.compile, cold cache (SmolLM2 on an H200: 20 s; a large model more)
GRAPH_CAPTURE_GUESS_S = 30.0  # CUDA graphs for the default capture sizes (SmolLM2 on an H200: 5 s)
OTHER_GUESS_S = 30.0  # process start, profile run, KV cache allocation, API server
# torch.compile on a relaunch with vLLM's compile cache warm, as a share of the cold compile: the same
# server (Qwen3-MoE shape, dummy weights, local runtime, vLLM 0.24) started twice on an H200, "torch.compile
# took 35.55 s in total", then "Directly load the compiled graph(s) ... from the cache" and 8.55 s.
WARM_COMPILE_SHARE = 8.55 / 35.55
WARM_COMPILE_SOURCE = (
    "torch.compile from vLLM's warm cache: 0.24 of the cold compile (8.55 s vs 35.55 s, the same server started "
    "twice, benchmarks/results/numerics/h200-numerics-moe/servers/graphs/server.log)"
)
PAGE_CACHE_UNKNOWN = "weights read again at the cold rate (page cache across launches: unknown)"

_LOAD = re.compile(r"Model loading took ([0-9.]+) GiB(?: memory)? and ([0-9.]+) seconds")
_COMPILE = re.compile(r"torch\.compile took ([0-9.]+) s in total")
_CAPTURE = re.compile(r"Graph capturing finished in ([0-9.]+) secs")


class StartupParts(TypedDict):
    """One server's start-up estimate and where each part comes from."""

    weights_gib_per_rank: float | None
    load_rate_gib_s: float
    load_s: float
    compile_s: float
    graph_capture_s: float
    other_s: float
    total_s: float
    source: str
    restart_s: float  # a relaunch of the same server (launch 2 and up)
    restart_source: str


class MeasuredStart(TypedDict):
    rate_gib_s: float  # per rank
    load_s: float  # as logged: the load of that run's model, for a plan whose weights are not readable here
    compile_s: float
    graph_capture_s: float
    other_s: float


def storage_class(config: ServerConfig) -> str:
    """Where the weights are read from, as the estimate assumes it: a shared filesystem for servers
    on a scheduler's or other hosts' nodes, else the local disk."""
    remote = config.multi_node or config.elsewhere() is not None
    return "shared filesystem" if remote else "local disk"


def _parsed(server_dir: Path) -> MeasuredStart | None:
    """One start's parts from a server folder's vLLM log and its record (None where either says too little)."""
    log, record = server_dir / "server.log", server_dir / "server.json"
    if not log.is_file() or not record.is_file():
        return None
    text = log.read_text(encoding="utf-8", errors="replace")
    loads, compiles, captures = _LOAD.findall(text), _COMPILE.findall(text), _CAPTURE.findall(text)
    ready = [float(s["ready_after_s"]) for s in read_json(record).get("starts") or [] if s.get("ready_after_s")]
    if not loads or not ready:
        return None
    gib, seconds = float(loads[-1][0]), float(loads[-1][1])
    compile_s = float(compiles[-1]) if compiles else 0.0
    capture_s = float(captures[-1]) if captures else 0.0
    return {
        "rate_gib_s": gib / seconds if seconds > 0 else math.inf,
        "load_s": seconds,
        "compile_s": compile_s,
        "graph_capture_s": capture_s,
        "other_s": max(ready[-1] - seconds - compile_s - capture_s, 0.0),
    }


def measured_starts(run_dir: Path) -> dict[str, MeasuredStart]:
    """Per server of an earlier run: its load rate, compile, graph capture and the rest, from its log."""
    servers = RunDir(run_dir).root / "servers"
    found = {d.name: _parsed(d) for d in (sorted(servers.iterdir()) if servers.is_dir() else []) if d.is_dir()}
    return {name: parts for name, parts in found.items() if parts is not None}


def measured_relaunches(run_dir: Path) -> dict[str, MeasuredStart]:
    """Per server of an earlier run that launched it more than once: its relaunches' parts (launch 2 and up,
    each from its own log), the median of each part over them."""
    servers = RunDir(run_dir).root / "servers"
    out: dict[str, MeasuredStart] = {}
    for server_dir in sorted(servers.iterdir()) if servers.is_dir() else []:
        later = sorted(server_dir.glob(f"{LAUNCH_PREFIX}*")) if server_dir.is_dir() else []
        starts = [parts for parts in (_parsed(d) for d in later) if parts is not None]
        if starts:
            out[server_dir.name] = _median(starts)
    return out


def _median(starts: list[MeasuredStart]) -> MeasuredStart:
    """Each part's median over several starts (compile over those that compiled, else the guess)."""
    compiled = [m["compile_s"] for m in starts if m["compile_s"] > 0]
    return {
        "rate_gib_s": statistics.median(m["rate_gib_s"] for m in starts),
        "load_s": statistics.median(m["load_s"] for m in starts),
        "compile_s": statistics.median(compiled) if compiled else COMPILE_GUESS_S,
        "graph_capture_s": statistics.median(m["graph_capture_s"] for m in starts),
        "other_s": statistics.median(m["other_s"] for m in starts),
    }


def _weights_gib(plan: Plan) -> float | None:
    found = weights_bytes(plan.model.path)
    if found:
        return found / GIB
    return plan.model.weights_gib


def startup_parts(
    plan: Plan,
    config: ServerConfig,
    server: str,
    measured: dict[str, MeasuredStart],
    relaunched: dict[str, MeasuredStart] | None = None,
) -> StartupParts:
    """The start-up estimate of one server config, in parts (``relaunched``: an earlier run's relaunches)."""
    launched = config.launched()
    if launched is None:
        return {
            "weights_gib_per_rank": None,
            "load_rate_gib_s": 0.0,
            "load_s": 0.0,
            "compile_s": 0.0,
            "graph_capture_s": 0.0,
            "other_s": 0.0,
            "total_s": 0.0,
            "source": "an endpoint: already running, nothing starts",
            "restart_s": 0.0,
            "restart_source": "an endpoint: nothing starts",
        }
    eager = "--enforce-eager" in config.args
    weights = _weights_gib(plan)
    per_rank = weights / config.tensor_parallel_size if weights is not None else None
    mine = measured.get(server)
    if mine is None and measured:
        mine = _median(list(measured.values()))
        source = "--from-run (median of its servers)"
    elif mine is not None:
        source = "--from-run (this server)"
    else:
        source = ""
    if mine is not None:
        rate, compile_s, capture_s, other_s = (
            mine["rate_gib_s"],
            mine["compile_s"],
            mine["graph_capture_s"],
            mine["other_s"],
        )
    else:
        where = storage_class(config)
        node_rate = STORAGE_RATE_GB_S[where] * GB / GIB
        ranks_per_node = max(config.tensor_parallel_size // max(launched.nodes, 1), 1)
        rate = node_rate / ranks_per_node  # the node's ranks share its read rate
        compile_s, capture_s, other_s = COMPILE_GUESS_S, GRAPH_CAPTURE_GUESS_S, OTHER_GUESS_S
        source = f"default: {where} at {STORAGE_RATE_GB_S[where]:g} GB/s per node; compile, capture, rest guessed"
    if eager:
        compile_s = capture_s = 0.0
    load_s = per_rank / rate if per_rank is not None and rate > 0 else 0.0
    if per_rank is None and mine is not None:
        load_s = mine["load_s"]
        source += "; weights unknown here: the load as that run logged it"
    elif per_rank is None:
        source += "; weights unknown here (set model.weights_gib): load not counted"
    total_s = load_s + compile_s + capture_s + other_s
    restart_s, restart_source = measured_restart(relaunched or {}, server, per_rank, eager) or restart(
        launched, total_s, compile_s
    )
    return {
        "weights_gib_per_rank": per_rank,
        "load_rate_gib_s": rate,
        "load_s": load_s,
        "compile_s": compile_s,
        "graph_capture_s": capture_s,
        "other_s": other_s,
        "total_s": total_s,
        "source": source,
        "restart_s": restart_s,
        "restart_source": restart_source,
    }


def measured_restart(
    relaunched: dict[str, MeasuredStart], server: str, per_rank: float | None, eager: bool
) -> tuple[float, str] | None:
    """A relaunch as an earlier run measured it (this server's relaunches, else the median of its servers'):
    its own load rate (whatever the page cache held then), compile, capture and rest; None without one."""
    mine, source = relaunched.get(server), "--from-run (this server's relaunches, as logged)"
    if mine is None and relaunched:
        mine, source = _median(list(relaunched.values())), "--from-run (the median of its servers' relaunches)"
    if mine is None:
        return None
    load_s = per_rank / mine["rate_gib_s"] if per_rank is not None and mine["rate_gib_s"] > 0 else mine["load_s"]
    compiled = 0.0 if eager else mine["compile_s"] + mine["graph_capture_s"]
    return load_s + compiled + mine["other_s"], source


def restart(config: LaunchedConfig, total_s: float, compile_s: float) -> tuple[float, str]:
    """A relaunch of the same server: its seconds and why (the module's docstring says what is charged)."""
    if compile_s == 0.0:
        return total_s, f"as the first start (nothing compiled); {PAGE_CACHE_UNKNOWN}"
    if config.image_ref() is not None:
        return total_s, (
            "as the first start: each launch is a fresh container, which keeps no vLLM compile cache "
            f"(byog mounts none); {PAGE_CACHE_UNKNOWN}"
        )
    if config.env.get("VLLM_DISABLE_COMPILE_CACHE", "0") not in ("", "0"):
        return total_s, f"as the first start: the server sets VLLM_DISABLE_COMPILE_CACHE; {PAGE_CACHE_UNKNOWN}"
    warm = compile_s * WARM_COMPILE_SHARE
    return total_s - compile_s + warm, f"{WARM_COMPILE_SOURCE}; {PAGE_CACHE_UNKNOWN}; CUDA graphs captured again"
