"""An interleaved pair's sweep against two loopback fake servers, through byog's own ``Pair`` and
``bench_pair``: the rows and server records a real interleaved run writes (sleep and wake are
logged, not performed: two fakes share nothing)."""

from __future__ import annotations

from pathlib import Path

import httpx

from byog.analysis.interleave import follows_wake
from byog.analysis.validity import load_point_record
from byog.bench.ceiling import FakeConfig, FakeServerThread
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.pipeline import interleave
from byog.plans.load import parse_plan
from byog.runtimes.record import served_max_model_len, write_server_record
from byog.schemas.bench import read_request_rows, write_request_rows
from byog.schemas.plan import Plan
from byog.schemas.server import Endpoint, ServerRecord
from tests.support.fake_vllm import FakeVllm

SWEEP_PLAN = """
name: t
model: {path: /m}
servers:
  cand: {}
  base: {}
baseline: base
pairs: [{candidate: cand, baseline: base, interleave: true}]
workloads:
  - {kind: batch, name: decode, batch_sizes: [1, 3], isl: [5], osl: [12], warmup_waves: 1, waves: 4}
  - {kind: concurrency, name: cl, concurrencies: [2], isl: [1], osl: [16], num_prompts: 6}
"""
# B=1 only: the one batch point whose decode window any wave of loopback requests has
BATCH_PLAN = SWEEP_PLAN.split("  - {kind: concurrency", 1)[0].replace("batch_sizes: [1, 3]", "batch_sizes: [1]")


class NoSwap:
    """Sleep controls of servers that share nothing (two loopback fakes): the order is what is tested."""

    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def sleep(self) -> float:
        self.log.append(f"sleep {self.name}")
        return 0.0

    def wake_up(self) -> float:
        self.log.append(f"wake {self.name}")
        return 0.0


class FakeServer:
    """A launched server over a loopback fake; its endpoint carries the context the fake's /v1/models
    states (none where it states none), as a launch reads it from a vLLM."""

    def __init__(self, name: str, fake: FakeVllm) -> None:
        self.name, self.fake = name, fake
        models = httpx.get(f"{fake.base_url}/v1/models", timeout=10.0).json()
        self.endpoint = Endpoint(base_url=fake.base_url, model="fake", max_model_len=served_max_model_len(models))
        self.stopped = False

    def alive(self) -> bool:
        return True

    def log_tail(self, lines: int = 30) -> str:
        return ""

    def restart(self) -> None: ...

    def stop(self) -> None:
        self.stopped = True


def interleaved_sweep(folder: Path, log: list[str] | None = None, text: str = SWEEP_PLAN) -> tuple[RunDir, Plan]:
    """The plan ``text``'s pair run interleaved into ``folder`` (plan.yaml, rows, both server.json records)."""
    plan = parse_plan(text, "plan.yaml")
    rd = RunDir(folder)
    (folder / "plan.yaml").write_text(text)
    log = [] if log is None else log
    with FakeServerThread(FakeConfig(step_s=0.002)) as fa, FakeServerThread(FakeConfig(step_s=0.003)) as fb:
        pair = interleave.Pair(plan, {"A": "base", "B": "cand"}, rd)
        for side, name, fake, partner in (("A", "base", fa, "cand"), ("B", "cand", fb, "base")):
            pair.servers[side] = FakeServer(name, fake)  # type: ignore[index,arg-type]
            pair.controls[side] = NoSwap(log, name)  # type: ignore[index,assignment]
            pair.records[side] = {"partner": partner, "side": side, "level": 1, "swaps": []}  # type: ignore[index]
            write_server_record(rd.server_record(name), ServerRecord(name=name))
        pair.awake = "B"
        interleave.bench_pair(pair, rd, None, NullReporter())
    return rd, plan


def steady_waves(rd: RunDir, server: str, woken: float = 1.0) -> None:
    """Make ``server``'s run as a quiet machine would have it, and its woken waves ``woken`` times as
    fast as the rest: every inter-token gap set to 0.5 ms (times ``1 / woken`` in a wave right after a
    wake; the fakes step 2 ms or more, so gaps only shrink for ``woken`` >= 0.25 and every row stays in
    its visit), the client's event-loop lag zero. A loaded test box neither saturates the client nor
    blurs the wake effect then."""
    for point_id in rd.bench_point_ids(server):
        path = rd.bench_rows(server, point_id)
        rows = read_request_rows(path)
        for row in rows:
            gap = 500_000 / (woken if row.interleave_seq is not None and follows_wake(row.interleave_seq) else 1.0)
            if row.chunk_t_ns:
                first = row.chunk_t_ns[0]
                row.chunk_t_ns = [first + round(i * gap) for i in range(len(row.chunk_t_ns))]
        write_request_rows(path, rows)
        record = load_point_record(rd.bench_point(server, point_id))
        if record.client is not None:
            quiet = record.client.model_copy(update={"loop_lag_p99_s": 0.0, "loop_lag_max_s": 0.0})
            atomic_write_json(
                rd.bench_point(server, point_id), record.model_copy(update={"client": quiet}).model_dump(mode="json")
            )
