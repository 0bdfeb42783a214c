"""An interleaved pair's sweep against two loopback fake servers, through byog's own ``Pair`` and
``bench_pair``: the rows and server records a real interleaved run writes (sleep and wake are
logged, not performed: two fakes share nothing)."""

from __future__ import annotations

from pathlib import Path

from byog.bench.ceiling import FakeConfig, FakeServerThread
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.pipeline import interleave
from byog.plans.load import parse_plan
from byog.runtimes.record import write_server_record
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
    def __init__(self, name: str, fake: FakeVllm) -> None:
        self.name, self.fake = name, fake
        self.endpoint = Endpoint(base_url=fake.base_url, model="fake")
        self.stopped = False

    def alive(self) -> bool:
        return True

    def log_tail(self, lines: int = 30) -> str:
        return ""

    def restart(self) -> None: ...

    def stop(self) -> None:
        self.stopped = True


def interleaved_sweep(folder: Path, log: list[str] | None = None) -> tuple[RunDir, Plan]:
    """SWEEP_PLAN's pair run interleaved into ``folder`` (plan.yaml, rows, both server.json records)."""
    plan = parse_plan(SWEEP_PLAN, "plan.yaml")
    rd = RunDir(folder)
    (folder / "plan.yaml").write_text(SWEEP_PLAN)
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
