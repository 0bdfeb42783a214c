"""Expand a plan's workload grid into bench points, and refuse, before launch, points a server cannot hold.

A point's id names the workload and its coordinates only (``decode-b4-isl32-osl64``), never the
server, so the same id on every server pairs candidate with baseline.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict

from byog.bundles.rundir import safe_name
from byog.errors import UsageError
from byog.images.launch import arg_value
from byog.plans.model import (
    AgenticWorkload, BatchWorkload, ConcurrencyWorkload, DatasetPrompts, Plan, RandomPrompts, RateWorkload,
)


class BenchPoint(BaseModel):
    """One measured point: a workload at one (B or C or rate, ISL, OSL)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    point_id: str
    workload: str  # the workload's name in the plan
    kind: Literal["batch", "concurrency", "rate"]
    batch_size: int | None = None
    concurrency: int | None = None
    rate: float | None = None  # requests/s
    isl: int
    osl: int
    api: Literal["completions", "chat"] = "completions"
    prompts: Union[RandomPrompts, DatasetPrompts]
    warmup_waves: int = 0  # batch
    waves: int = 0  # batch: measured waves
    num_prompts: int = 0  # concurrency/rate: measured requests
    warmup_prompts: int = 0  # concurrency
    prompt_seed: int = 0
    arrival_seed: int = 0  # rate
    reset_prefix_cache: bool = False
    servers: tuple[str, ...] = ()

    @property
    def total_requests(self) -> int:
        """Requests sent, warm-up included."""
        if self.kind == "batch":
            assert self.batch_size is not None
            return self.batch_size * (self.warmup_waves + self.waves)
        return self.num_prompts + self.warmup_prompts

    @property
    def measured_requests(self) -> int:
        return self.batch_size * self.waves if self.kind == "batch" and self.batch_size else self.num_prompts

    @property
    def load_label(self) -> str:
        if self.kind == "batch":
            return f"B={self.batch_size}"
        if self.kind == "concurrency":
            return f"C={self.concurrency}"
        return f"{self.rate:g} req/s"


def _rate_tag(rate: float) -> str:
    return f"{rate:g}".replace("+", "")


def point_id_for(workload: str, kind: str, load: float, isl: int, osl: int) -> str:
    tag = {"batch": f"b{int(load)}", "concurrency": f"c{int(load)}", "rate": f"r{_rate_tag(load)}"}[kind]
    return safe_name(f"{workload}-{tag}-isl{isl}-osl{osl}", "point id")


def expand_plan(plan: Plan) -> list[BenchPoint]:
    """Every bench point of the plan in run order (workload, ISL, OSL, load). Agentic workloads are skipped."""
    points: list[BenchPoint] = []
    seen: set[str] = set()
    prompt_seed = plan.seeds[0]
    for workload in plan.workloads:
        if isinstance(workload, AgenticWorkload):
            continue
        name = safe_name(workload.name or workload.kind, "workload name")
        servers = tuple(plan.servers_for(workload))
        if isinstance(workload, BatchWorkload):
            loads: list[float] = list(workload.batch_sizes)
        elif isinstance(workload, ConcurrencyWorkload):
            loads = list(workload.concurrencies)
        else:
            loads = list(workload.rates)
        for isl in workload.isl:
            for osl in workload.osl:
                for load in loads:
                    pid = point_id_for(name, workload.kind, load, isl, osl)
                    if pid in seen:
                        continue  # a list that repeats a value: measure it once
                    seen.add(pid)
                    common = dict(
                        point_id=pid, workload=name, kind=workload.kind, isl=isl, osl=osl, api=workload.api,
                        prompts=workload.prompts, prompt_seed=prompt_seed,
                        reset_prefix_cache=workload.reset_prefix_cache, servers=servers,
                    )
                    if isinstance(workload, BatchWorkload):
                        points.append(BenchPoint(**common, batch_size=int(load), warmup_waves=workload.warmup_waves, waves=workload.waves))
                    elif isinstance(workload, ConcurrencyWorkload):
                        points.append(BenchPoint(**common, concurrency=int(load), num_prompts=workload.num_prompts,
                                                 warmup_prompts=workload.warmup_prompts))
                    else:
                        assert isinstance(workload, RateWorkload)
                        points.append(BenchPoint(**common, rate=float(load), num_prompts=workload.num_prompts,
                                                 arrival_seed=workload.seed))
    return points


def points_for_server(plan: Plan, server: str) -> list[BenchPoint]:
    return [p for p in expand_plan(plan) if server in p.servers]


def unimplemented_workloads(plan: Plan) -> list[str]:
    return [w.name or w.kind for w in plan.workloads if isinstance(w, AgenticWorkload)]


def check_plan_fits(plan: Plan, max_model_len: int | None = None, max_num_seqs: dict[str, int] | None = None) -> None:
    """Refuse, before any launch, a workload a server cannot hold; the message names the workload.

    - ISL + OSL over the context (``max_model_len`` argument, else ``--max-model-len`` in the
      server's args, else the plan's ``model.max_model_len``; unknown = not checked);
    - B (batch) or C (concurrency) over the server's ``--max-num-seqs`` (the requests would
      queue, so the point would measure a smaller batch than it says).
    """
    for point in expand_plan(plan):
        for server in point.servers:
            args = plan.servers[server].args
            limit = max_model_len or _int(arg_value(args, "--max-model-len")) or plan.model.max_model_len
            if limit is not None and point.isl + point.osl > limit:
                raise UsageError(
                    f"workload '{point.workload}' asks for ISL {point.isl} + OSL {point.osl} = {point.isl + point.osl} "
                    f"tokens but server '{server}' holds at most max_model_len = {limit}"
                )
            seqs = (max_num_seqs or {}).get(server) or _int(arg_value(args, "--max-num-seqs"))
            load = point.batch_size or point.concurrency
            if seqs is not None and load is not None and load > seqs:
                what = "batch size" if point.kind == "batch" else "concurrency"
                raise UsageError(
                    f"workload '{point.workload}' asks for {what} {load} but server '{server}' runs at most "
                    f"--max-num-seqs {seqs} sequences at once"
                )


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        raise UsageError(f"'{value}' is not a whole number") from None
