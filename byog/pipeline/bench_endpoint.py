"""``byog bench``: the sweep against a server that is already running (e.g. on a GPU box).

Builds a one-server plan from the flags (or takes one server of a plan file), writes the same
run-directory files as ``byog run`` (plan.yaml, servers/<name>/server.json, bench/<name>/*) and
returns the summary. Imports stay light: this runs where only vLLM's own dependencies exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from byog.analysis.bench_summary import summarize_bench
from byog.bench.sweep import SweepOutcome, run_bench_for_server
from byog.core.errors import EnvironmentProblem, UsageError
from byog.core.io import atomic_write_text
from byog.core.paths import RunDir, new_run_id
from byog.core.reporter import Reporter
from byog.core.settings import runs_dir
from byog.plans.expand import check_plan_fits
from byog.plans.load import load_plan, parse_plan
from byog.runtimes.endpoint import EndpointServer
from byog.schemas.bench import PointSummary
from byog.schemas.plan import EndpointConfig, Plan, ServerBase
from byog.schemas.server import PreparedModel

ENDPOINT_SERVER = "endpoint"


@dataclass
class BenchFlags:
    endpoint: str
    model: str | None = None
    tokenizer: str | None = None
    workload: str = "batch"
    batch_sizes: list[int] = field(default_factory=lambda: [1])
    concurrencies: list[int] = field(default_factory=lambda: [1])
    rates: list[float] = field(default_factory=lambda: [1.0])
    num_prompts: int = 32
    warmup_prompts: int = 0  # concurrency workload: requests through the same loop first, not measured
    isl: list[int] = field(default_factory=lambda: [32])
    osl: list[int] = field(default_factory=lambda: [64])
    waves: int = 3
    warmup_waves: int = 1
    api: str = "completions"
    prompts: str = "random"  # random | random-text | mt_bench | gsm8k
    seed: int = 1234
    reset_prefix_cache: bool = False
    request_body: str = "byog"  # byog | vllm (what `vllm bench serve` sends)
    remeasure: int | None = None  # None: the plan schema's default
    plan: str | None = None
    server: str | None = None
    data_dir: Path | None = None


@dataclass(frozen=True)
class BenchResult:
    run_dir: Path
    server: str
    sweep: SweepOutcome  # what the sweep did: points run, skipped, failed, restarts, measuring share
    points: list[PointSummary]

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": str(self.run_dir),
            "server": self.server,
            "sweep": self.sweep,
            "points": [p.model_dump(mode="json") for p in self.points],
        }


def plan_from_flags(flags: BenchFlags, model: str) -> tuple[Plan, str]:
    prompts: dict[str, Any] = (
        {"kind": "random", "send": "text" if flags.prompts == "random-text" else "ids"}
        if flags.prompts.startswith("random")
        else {"kind": "dataset", "dataset": flags.prompts}
    )
    common = {
        "isl": flags.isl,
        "osl": flags.osl,
        "api": flags.api,
        "prompts": prompts,
        "reset_prefix_cache": flags.reset_prefix_cache,
        **({"request_body": flags.request_body} if flags.request_body != "byog" else {}),
    }
    if flags.workload == "batch":
        workload = {
            "kind": "batch",
            "name": "decode",
            "batch_sizes": flags.batch_sizes,
            "waves": flags.waves,
            "ci_target": None,  # --waves N measures exactly N waves
            "warmup_waves": flags.warmup_waves,
            **common,
        }
    elif flags.workload == "concurrency":
        workload = {
            "kind": "concurrency",
            "name": "closed",
            "concurrencies": flags.concurrencies,
            "num_prompts": flags.num_prompts,
            "warmup_prompts": flags.warmup_prompts,
            **common,
        }
    elif flags.workload == "rate":
        workload = {
            "kind": "rate",
            "name": "poisson",
            "rates": flags.rates,
            "num_prompts": flags.num_prompts,
            "seed": flags.seed,
            **common,
        }
    else:
        raise UsageError(f"--workload must be batch, concurrency or rate, not '{flags.workload}'")
    data = {
        "name": "bench",
        "description": f"byog bench against {flags.endpoint}",
        "model": {"path": model, "served_name": model, **({"tokenizer": flags.tokenizer} if flags.tokenizer else {})},
        "servers": {ENDPOINT_SERVER: {"runtime": "endpoint", "url": flags.endpoint}},
        "baseline": ENDPOINT_SERVER,
        "workloads": [workload],
        "seeds": [flags.seed],
        **({"remeasure": flags.remeasure} if flags.remeasure is not None else {}),
    }
    text = yaml.safe_dump(data, sort_keys=False)
    return parse_plan(text, "the bench flags"), text


def _served_model(endpoint: str) -> str:
    try:
        cards = httpx.get(endpoint.rstrip("/") + "/v1/models", timeout=10.0).json().get("data", [])
    except (httpx.HTTPError, ValueError) as err:
        raise EnvironmentProblem(f"{endpoint}/v1/models did not answer: {err}") from None
    if not cards:
        raise EnvironmentProblem(f"{endpoint}/v1/models lists no model; pass --model")
    return str(cards[0]["id"])


def bench_endpoint(flags: BenchFlags, run_dir: Path | None, reporter: Reporter) -> BenchResult:
    """Run the sweep against ``flags.endpoint`` into ``run_dir`` (resuming it) and summarize it."""
    endpoint = flags.endpoint.rstrip("/").removesuffix("/v1")
    if flags.plan:
        if flags.remeasure is not None:
            raise UsageError("--remeasure sets the plan the flags make; with --plan, set `remeasure` in the plan")
        plan, text = load_plan(flags.plan)
        server_name = flags.server or plan.baseline
        if server_name not in plan.servers:
            raise UsageError(f"--server '{server_name}' is not one of the plan's servers {sorted(plan.servers)}")
        # the plan's server as the endpoint it already is: its vLLM settings, none of its launch
        vllm_settings = plan.servers[server_name].model_dump(include=set(ServerBase.model_fields))
        config = EndpointConfig(url=endpoint, **vllm_settings)
        model = flags.model or plan.model.served_name or _served_model(endpoint)
    else:
        model = flags.model or _served_model(endpoint)
        plan, text = plan_from_flags(flags, model)
        server_name = ENDPOINT_SERVER
        config = EndpointConfig.model_validate(plan.servers[server_name].model_dump())  # the endpoint it wrote
    folder = RunDir(Path(run_dir) if run_dir else runs_dir() / f"bench-{new_run_id()}")
    if folder.plan_yaml.is_file() and folder.plan_yaml.read_text(encoding="utf-8") != text:
        raise UsageError(f"{folder.root} holds a different plan.yaml: give a new --run-dir or the same flags to resume")
    atomic_write_text(folder.plan_yaml, text)
    prepared = PreparedModel(
        path=plan.model.path,
        served_name=model,
        tokenizer=flags.tokenizer or plan.model.tokenizer or "",
        max_model_len=plan.model.max_model_len,
    )
    server = EndpointServer(server_name, config, prepared, folder.server_dir(server_name))
    check_plan_fits(plan, max_model_len=server.endpoint.max_model_len)
    sweep = run_bench_for_server(
        plan, server_name, server, folder, reporter, tokenizer=flags.tokenizer or None, data_dir=flags.data_dir
    )
    points = [p for p in summarize_bench(folder, plan).points if p.server == server_name]
    return BenchResult(run_dir=folder.root, server=server_name, sweep=sweep, points=points)
