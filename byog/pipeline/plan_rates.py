"""``byog plan``'s decode rates and eval times: where each TPOT comes from, and how many eval
requests a server holds at once.

TPOT of a (server, batch), first found of:

1. ``measured``: ``--from-run``'s TPOT p50 at this point (else that server's median there);
2. ``seeds' figure``: the profile's built-in claims file (the published figures it reproduces):
   a ``decode_tok_s`` value claim at batch B is the TP group's aggregate decode rate, so
   TPOT = B / tok/s; a baseline without its own figure takes its candidate's over the claimed
   speed-up; a server without any takes the figure of a server on the same side of its pair with
   the same TP. Between batches the nearest claimed one is used; above the largest claimed B the
   throughput is held at that B's (TPOT scaled by B / B_max: an upper bound);
3. ``guess``: ``TPOT_GUESS_S``.

Evals (the same capacity rule ``byog run`` uses): a server runs min(max_num_seqs, KV tokens //
(prompt + max tokens)) requests at once, the prompt being the task's ``prompt_reserve_tokens``.
With ``--from-run`` the KV tokens and max_num_seqs are what each server of that run reported
(``/server_info``: num_gpu_blocks x block_size). Else the plan cannot know them: the KV cache is
*assumed* to hold what the plan's own largest bench point on that server (or a server with the
same TP) puts in it, B x (ISL + OSL), and ``max_num_seqs`` is the server's ``--max-num-seqs`` or
vLLM's default below 70 GiB of GPU memory (256; 1024 above). Per server and eval: ceil(requests /
concurrency) rounds of (TTFT + expected output tokens x TPOT at that batch); the expected output is
half the answer length its requests ask for (``byog.plans.tasks.answer_tokens``; a guess: answers stop
early on their stop strings). Where the plan's ``looks`` may stop an eval early, ``expected_s`` is
that time at the expected share of its items (``byog.pipeline.eval_stopping``); ``estimate_s`` stays
every item.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

from byog.bundles.claims_in import read_claims_file
from byog.core.argv import arg_value
from byog.core.io import read_json
from byog.evals.capacity import concurrency_for, kv_capacity
from byog.pipeline.eval_stopping import expected_share
from byog.plans.claims_files import builtin_claims, builtin_claims_path
from byog.plans.tasks import TASKS, answer_tokens
from byog.plans.tiers import eval_items
from byog.schemas.bench import BenchPoint
from byog.schemas.claims import RatioClaim, ValueClaim
from byog.schemas.plan import Plan

TPOT_GUESS_S = 0.030  # CPU vLLM + SmolLM2-135M at batch 1 decodes ~38 tok/s
TTFT_GUESS_S = 0.100
EXPECTED_SHARE_OF_MAX_GEN = 0.5
MRCR_ANSWER_GUESS = 1024  # MRCR's answer length: its runner sizes each item to the context (a guess here)
VLLM_DEFAULT_MAX_NUM_SEQS = 256  # vllm EngineArgs on a GPU under 70 GiB (1024 at 70 GiB and more)


SEEDS = "seeds' figure"


@dataclass(frozen=True)
class Rate:
    """A TPOT and where it comes from (``source``: measured, server median, seeds' figure, guess)."""

    tpot_s: float
    source: str
    why: str


def batch_of(point: BenchPoint) -> int:
    """Requests a point keeps in flight: its batch size or concurrency (1 for a rate or trace)."""
    return point.batch_size or point.concurrency or 1


def _claimed_rates(plan: Plan) -> dict[str, dict[int, float]]:
    """Per server, batch -> aggregate decode tok/s from the profile's built-in claims file (empty when none)."""
    if plan.name not in builtin_claims():
        return {}
    claims = [
        c
        for c in read_claims_file(builtin_claims_path(plan.name))
        if isinstance(c, ValueClaim | RatioClaim) and c.metric == "decode_tok_s" and c.value > 0
    ]
    rates: dict[str, dict[int, float]] = {}
    for c in claims:
        batch = (c.select or {}).get("batch_size")
        if isinstance(c, ValueClaim) and isinstance(batch, int):
            rates.setdefault(c.server, {}).setdefault(batch, c.value)
    for c in claims:
        batch = (c.select or {}).get("batch_size")
        if not (isinstance(c, RatioClaim) and isinstance(batch, int)):
            continue
        candidate = rates.get(c.candidate, {}).get(batch)
        if candidate is not None:
            rates.setdefault(c.baseline, {}).setdefault(batch, candidate / c.value)
    return rates


class SeedRates:
    """The seeds' figure of any (server, batch) of a plan, with the sentence saying how it was found."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.rates = _claimed_rates(plan)

    def _side(self, server: str) -> str | None:
        for candidate, baseline in self.plan.comparisons:
            if server in (candidate, baseline):
                return "candidate" if server == candidate else "baseline"
        return None

    def _donor(self, server: str) -> str | None:
        """The server whose figures stand in: itself, else one on the same side with the same TP."""
        if server in self.rates:
            return server
        tp = self.plan.servers[server].tensor_parallel_size
        side = self._side(server)
        for other in self.rates:
            config = self.plan.servers.get(other)
            like = config is not None and config.tensor_parallel_size == tp and not config.speculative_config
            if like and self._side(other) == side:
                return other
        return None

    def rate(self, server: str, batch: int) -> Rate | None:
        donor = self._donor(server)
        if donor is None:
            return None
        table = self.rates[donor]
        near = min(table, key=lambda b: (abs(math.log(b / batch)), b))
        largest = max(table)
        like = "" if donor == server else f" (as {donor}: same side and TP)"
        if batch > largest:
            tpot = batch / table[largest]
            why = f"{donor} B={largest}: {table[largest]:.0f} tok/s held up to B={batch}{like}"
        else:
            tpot = near / table[near]
            why = f"{donor} B={near}: {table[near]:.0f} tok/s{like}"
        return Rate(tpot, SEEDS, why)


def measured_rate(per_point: dict[tuple[str, str], tuple[float, float]], server: str, point_id: str) -> Rate | None:
    """A TPOT ``--from-run`` measured at this point, else that server's median there."""
    if (server, point_id) in per_point:
        return Rate(per_point[(server, point_id)][0], "measured", f"--from-run, {server} {point_id}")
    mine = [v[0] for (s, _), v in per_point.items() if s == server]
    if mine:
        return Rate(statistics.median(mine), "server median", f"--from-run, median of {server}'s {len(mine)} points")
    return None


GUESS = Rate(TPOT_GUESS_S, "guess", f"a guess of {TPOT_GUESS_S * 1e3:.0f} ms (CPU vLLM + SmolLM2-135M at B=1)")


class EvalEstimate(TypedDict):
    server: str
    task: str
    requests: int
    concurrency: int
    concurrency_why: str  # the capacity rule with its figures
    operating_points: dict[int, int] | None  # the plan's operating points: point -> expected requests there
    stratum_items: dict[int, int] | None  # point -> expected items there: in flight at once, at most that many
    kv_why: str  # where the KV tokens come from ("assumed: ..." where the plan cannot know)
    expected_tokens: int
    tpot_s: float
    tpot_source: str
    tpot_why: str
    estimate_s: float  # every item
    # a plan's group-sequential looks (``eval_stopping``): the expected share of the items, the seconds
    # at that share if the servers are identical, and the figures behind it; None: every item runs
    early_stop: dict[str, Any] | None
    expected_s: float


def _kv_tokens(plan: Plan, points: list[BenchPoint], server: str) -> tuple[int | None, str]:
    """The KV tokens a server is assumed to hold: its largest bench point's B x (ISL + OSL), else a same-TP
    server's."""
    tp = plan.servers[server].tensor_parallel_size
    same_tp = [s for s in plan.servers if plan.servers[s].tensor_parallel_size == tp]
    for pool in ([server], same_tp):
        mine = [p for p in points if set(p.servers) & set(pool) and p.kind != "rate"]
        if mine:
            top = max(mine, key=lambda p: batch_of(p) * (p.isl + p.osl))
            return (
                batch_of(top) * (top.isl + top.osl),
                f"KV tokens assumed: what the largest bench point {top.point_id} puts there "
                f"(B={batch_of(top)} x {top.isl + top.osl})",
            )
    return None, "KV tokens unknown: no bench point says what the KV cache holds (max_num_seqs alone)"


class Served(TypedDict):
    """What a server of an earlier run reported it holds (its recorded /server_info)."""

    kv_tokens: int
    max_num_seqs: int


def served_capacity(run_dir: Path) -> dict[str, Served]:
    """Per server of a run directory whose record kept /server_info: its KV cache tokens and max_num_seqs,
    as vLLM resolved them (read by the eval runner's own reader, ``evals.capacity.kv_capacity``)."""
    found: dict[str, Served] = {}
    for record in sorted((run_dir / "servers").glob("*/server.json")):
        tokens, seqs = kv_capacity((read_json(record).get("resolved") or {}).get("server_info"))
        if tokens is not None and seqs is not None:
            found[record.parent.name] = {"kv_tokens": tokens, "max_num_seqs": seqs}
    return found


def eval_estimates(
    plan: Plan,
    points: list[BenchPoint],
    rate_of: RateLookup,
    served: dict[str, Served] | None = None,
    from_run: Path | None = None,
    at_once: Collection[tuple[str, str]] = (),
) -> list[EvalEstimate]:
    """Per (server, eval): requests, the concurrency the server holds, expected output tokens, and seconds
    (every item, and the expected share where the plan's looks may stop it early; ``at_once``: the pairs
    whose evals run at once, ``byog.pipeline.eval_stopping.expected_share``)."""
    rows: list[EvalEstimate] = []
    for spec in plan.evals:
        task = TASKS.get(spec.task)
        max_gen = answer_tokens(task, spec.gen_kwargs) if task and task.runner == "lm_eval" else MRCR_ANSWER_GUESS
        prompt = task.prompt_reserve_tokens if task else 1024
        expected = max(int(max_gen * EXPECTED_SHARE_OF_MAX_GEN), 1)
        requests = eval_items(spec) * spec.passes
        for server in plan.servers_for(spec):
            seqs_flag = arg_value(plan.servers[server].args, "--max-num-seqs")
            max_seqs = int(seqs_flag) if seqs_flag else VLLM_DEFAULT_MAX_NUM_SEQS
            seqs_why = "--max-num-seqs" if seqs_flag else "vLLM's default under 70 GiB"
            kv, kv_why = _kv_tokens(plan, points, server)
            reported = (served or {}).get(server)
            if reported is not None:
                kv, max_seqs = reported["kv_tokens"], reported["max_num_seqs"]
                kv_why = seqs_why = "as the server reported in --from-run (/server_info)"
            concurrency = spec.num_concurrent or concurrency_for(kv, prompt + max_gen, max_seqs)
            why = (
                "the plan's num_concurrent"
                if spec.num_concurrent
                else f"min({max_seqs} max_num_seqs ({seqs_why}), "
                f"{kv} KV tokens // ({prompt} prompt + {max_gen} max tokens))"
            )
            rate = rate_of(server, None, concurrency)
            rounds = math.ceil(requests / concurrency)
            seconds = rounds * (TTFT_GUESS_S + expected * rate.tpot_s)
            strata = strata_requests(spec.operating_points, requests)
            if strata:
                # each stratum at its own point (B=1 sends its requests one after another); a point above
                # what the server holds queues the rest, so it runs at the capacity
                held = {b: min(b, concurrency) for b in strata}
                concurrency, why = max(strata), "the plan's operating points (each item's stratum: a hash of it)"
                rate = rate_of(server, None, held[concurrency])
                seconds = sum(
                    math.ceil(n / held[b]) * (TTFT_GUESS_S + expected * rate_of(server, None, held[b]).tpot_s)
                    for b, n in strata.items()
                )
            share = expected_share(plan, spec, server, from_run, at_once)
            rows.append(
                {
                    "server": server,
                    "task": spec.task,
                    "requests": requests,
                    "concurrency": concurrency,
                    "concurrency_why": why,
                    "operating_points": strata,
                    "stratum_items": strata_requests(spec.operating_points, eval_items(spec)),
                    "kv_why": kv_why,
                    "expected_tokens": expected,
                    "tpot_s": rate.tpot_s,
                    "tpot_source": rate.source,
                    "tpot_why": rate.why,
                    "estimate_s": seconds,
                    "early_stop": asdict(share) if share else None,
                    "expected_s": seconds * share.identical if share else seconds,
                }
            )
    return rows


def strata_requests(points: list[int] | None, requests: int) -> dict[int, int] | None:
    """The requests expected at each operating point: the strata split the items about evenly
    (``byog.analysis.strata``: each item's point is a hash of it), so requests / points each."""
    if not points:
        return None
    ordered = sorted(points)
    return {b: requests // len(ordered) + (1 if i < requests % len(ordered) else 0) for i, b in enumerate(ordered)}


def concurrency_said(e: EvalEstimate) -> str:
    """An eval's requests in flight as ``byog plan`` prints it: one concurrency, or each operating point's
    expected requests."""
    if e["operating_points"]:
        said = "operating points " + "/".join(f"{b} (~{n:,})" for b, n in e["operating_points"].items())
        # a stratum of fewer items than its point never has that many requests in flight
        short = [f"{b} gets ~{n:,} items, never {b} in flight" for b, n in (e["stratum_items"] or {}).items() if n < b]
        return said + (f" ({'; '.join(short)})" if short else "")
    return f"concurrency {e['concurrency']}"


class RateLookup:
    """TPOT of a (server, point or none, batch): measured, else the seeds' figure, else the guess."""

    def __init__(self, plan: Plan, per_point: dict[tuple[str, str], tuple[float, float]]) -> None:
        self.per_point = per_point
        self.seeds = SeedRates(plan)

    def __call__(self, server: str, point_id: str | None, batch: int) -> Rate:
        measured = measured_rate(self.per_point, server, point_id or "")
        if measured is not None:
            return measured
        return self.seeds.rate(server, batch) or GUESS
