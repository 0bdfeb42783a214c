"""``byog bench``: the sweep against a server that is already running (e.g. on a GPU box).

Builds a one-server plan from the flags (or takes one server of a plan file), writes the same
run-directory files as ``byog run`` (plan.yaml, servers/<name>/server.json, bench/<name>/*) and
returns the summary. Imports stay light: this runs where only vLLM's own dependencies exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from byog.errors import UsageError

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
    isl: list[int] = field(default_factory=lambda: [32])
    osl: list[int] = field(default_factory=lambda: [64])
    waves: int = 3
    warmup_waves: int = 1
    api: str = "completions"
    prompts: str = "random"  # random | mt_bench | gsm8k
    seed: int = 1234
    reset_prefix_cache: bool = False
    plan: str | None = None
    server: str | None = None
    data_dir: Path | None = None


def parse_int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what} must be whole numbers separated by commas, got '{text}'") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"{what} must be positive, got '{text}'")
    return values


def parse_float_list(text: str, what: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what} must be numbers separated by commas, got '{text}'") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"{what} must be positive, got '{text}'")
    return values


def _plan_from_flags(flags: BenchFlags, model: str) -> tuple[Any, str]:
    import yaml

    from byog.plans.load import parse_plan

    prompts: dict[str, Any] = {"kind": "random"} if flags.prompts == "random" else {"kind": "dataset", "dataset": flags.prompts}
    common = {"isl": flags.isl, "osl": flags.osl, "api": flags.api, "prompts": prompts,
              "reset_prefix_cache": flags.reset_prefix_cache}
    if flags.workload == "batch":
        workload = {"kind": "batch", "name": "decode", "batch_sizes": flags.batch_sizes, "waves": flags.waves,
                    "warmup_waves": flags.warmup_waves, **common}
    elif flags.workload == "concurrency":
        workload = {"kind": "concurrency", "name": "closed", "concurrencies": flags.concurrencies,
                    "num_prompts": flags.num_prompts, **common}
    elif flags.workload == "rate":
        workload = {"kind": "rate", "name": "poisson", "rates": flags.rates, "num_prompts": flags.num_prompts,
                    "seed": flags.seed, **common}
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
    }
    text = yaml.safe_dump(data, sort_keys=False)
    return parse_plan(text, "the bench flags"), text


def _served_model(endpoint: str) -> str:
    import httpx

    from byog.errors import EnvironmentProblem

    try:
        cards = httpx.get(endpoint.rstrip("/") + "/v1/models", timeout=10.0).json().get("data", [])
    except (httpx.HTTPError, ValueError) as err:
        raise EnvironmentProblem(f"{endpoint}/v1/models did not answer: {err}") from None
    if not cards:
        raise EnvironmentProblem(f"{endpoint}/v1/models lists no model; pass --model")
    return str(cards[0]["id"])


def bench_endpoint(flags: BenchFlags, run_dir: Path | None, console: Any) -> dict[str, Any]:
    """Run the sweep against ``flags.endpoint`` into ``run_dir`` (resuming it) and summarize it."""
    from byog.bench.summary import summarize_bench
    from byog.bench.sweep import run_bench_for_server
    from byog.bundles.rundir import RunDir, new_run_id
    from byog.images.endpoint import EndpointServer
    from byog.images.runtime import PreparedModel
    from byog.ioutil import atomic_write_text
    from byog.plans.expand import check_plan_fits
    from byog.plans.load import load_plan

    endpoint = flags.endpoint.rstrip("/").removesuffix("/v1")
    if flags.plan:
        plan, text = load_plan(flags.plan)
        server_name = flags.server or plan.baseline
        if server_name not in plan.servers:
            raise UsageError(f"--server '{server_name}' is not one of the plan's servers {sorted(plan.servers)}")
        config = plan.servers[server_name].model_copy(update={"runtime": "endpoint", "url": endpoint})
        model = flags.model or plan.model.served_name or _served_model(endpoint)
    else:
        model = flags.model or _served_model(endpoint)
        plan, text = _plan_from_flags(flags, model)
        server_name = ENDPOINT_SERVER
        config = plan.servers[server_name]
    folder = RunDir(Path(run_dir) if run_dir else Path("runs") / f"bench-{new_run_id()}")
    if folder.plan_yaml.is_file() and folder.plan_yaml.read_text(encoding="utf-8") != text:
        raise UsageError(f"{folder.root} holds a different plan.yaml: give a new --run-dir or the same flags to resume")
    atomic_write_text(folder.plan_yaml, text)
    prepared = PreparedModel(path=plan.model.path, served_name=model, tokenizer=flags.tokenizer or plan.model.tokenizer or "",
                             max_model_len=plan.model.max_model_len)
    server = EndpointServer(server_name, config, prepared, folder.server_dir(server_name))
    check_plan_fits(plan, max_model_len=server.endpoint.max_model_len)
    sweep = run_bench_for_server(plan, server_name, server, folder, console, tokenizer=flags.tokenizer or None,
                                 data_dir=flags.data_dir)
    summary = summarize_bench(folder, plan)
    points = [p for p in summary["points"] if p["server"] == server_name]
    return {"run_dir": str(folder.root), "server": server_name, "sweep": sweep, "points": points}


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"


def render_points(console: Any, points: list[dict[str, Any]], title: str = "bench") -> None:
    from rich.table import Table

    table = Table(title=title)
    for column in ("server", "point", "load", "prompts", "valid", "TTFT p50 ms", "TPOT p50 ms", "TPOT p90 ms",
                   "tok/s/user p50", "tok/s/user p90", "decode tok/s", "output tok/s"):
        table.add_column(column, justify="right" if "ms" in column or "tok" in column else "left",
                         no_wrap=column in ("server", "point"))
    for p in points:
        mtr = p.get("metrics") or {}
        load = f"B={p['batch_size']}" if p["kind"] == "batch" else f"C={p['concurrency']}" if p["kind"] == "concurrency" else f"{p['rate']:g}/s"
        table.add_row(
            p["server"], p["point_id"], load, p.get("prompts") or "-",
            "[green]yes[/]" if p["valid"] else "[red]no[/]",
            _ms((mtr.get("ttft_s") or {}).get("p50")), _ms((mtr.get("tpot_s") or {}).get("p50")),
            _ms((mtr.get("tpot_s") or {}).get("p90")),
            _num((mtr.get("tok_s_user") or {}).get("p50")), _num((mtr.get("tok_s_user") or {}).get("p90")),
            _num(mtr.get("decode_tok_s")), _num(mtr.get("output_tok_s")),
        )
    console.print(table)
    for p in points:
        for reason in p["invalid_reasons"]:
            console.print(f"[yellow]{p['server']} {p['point_id']} invalid:[/] {reason}", highlight=False, soft_wrap=True)
