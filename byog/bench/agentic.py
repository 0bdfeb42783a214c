"""The agentic workload: multi-turn sessions whose context grows, tool pauses, sub-agents forking a prefix.

Why: agent traffic is not independent requests. Each turn resends the whole context (every
earlier prompt and answer plus the new tool result), the agent pauses between turns while a
tool runs, and a planner may fork sub-agents that all start from its context. So prefill shrinks
to the new part when the server's prefix cache holds the rest, contexts get long, and TTFT
depends on the turn. A batch or closed-loop sweep of independent random prompts exercises none
of that.

The model of a session (every distribution a plan parameter, see ``SyntheticSessions``):

- turn 0's prompt = the point's shared prefix (an agent's system prompt and tool definitions,
  the same for every session) + the session's first input;
- turn k's prompt = turn k-1's prompt + the model's answer to it (its exact token ids, streamed
  back with ``return_token_ids``) + the new input (a tool result), sent after a pause
  (think time) that starts when the answer ends;
- after a turn's answer, with some probability, the agent forks W sub-agents: each starts from
  the agent's context + its own task input and runs its own turns; the parent waits for all of
  them and its next input is their final answers, concatenated;
- every answer is exactly its sampled length (``min_tokens = max_tokens``, EOS ignored), so the
  lengths of every prompt are known before the run and identical on every server;
- concurrency = sessions in flight (C workers, each runs whole sessions one after another);
  turns of one agent are sequential; sub-agents of one fork run in parallel.

Prompts are token ids (completions API), drawn like the random prompts of the other workloads
and seeded by (plan seed, point id, session, agent, turn): every server gets the same sessions
at the same point, and no point's sessions repeat another's (a prefix cache would otherwise
serve a later point from an earlier one). The shared prefix is the workload's, at every point. Each turn is one
``RequestRow`` with its place in the session (``session``, ``agent``, ``turn``, ...). The distributions are the plan's
``SyntheticSessions``.
"""

from __future__ import annotations

import asyncio
import math
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from byog.analysis.metrics import percentile
from byog.bench.client import StreamingClient
from byog.bench.prompts import random_token_ids
from byog.bench.workloads import LoadMonitor, PointRun
from byog.schemas.bench import BenchPoint, RequestRow
from byog.schemas.plan import (
    Constant,
    Exponential,
    LogNormal,
    SyntheticSessions,
    Uniform,
)

Distribution = Constant | Uniform | LogNormal | Exponential

Progress = Callable[[int], None]
WARMUP_SESSION_BASE = 1_000_000  # warm-up sessions are numbered from here: never one of the measured sessions
PREFIX_STREAM = 1 << 31  # the shared prefix's seed stream: never a session number


def sample(dist: Distribution, rng: Any, integer: bool) -> float:
    """One draw. Log-normal: ``mu = ln(mean x median_ratio)``, ``sigma = sqrt(-2 ln median_ratio)``
    (so ``E[X] = mean``); ``max`` clips. Integers round half up and are at least 1."""
    if isinstance(dist, Constant):
        value = dist.value
    elif isinstance(dist, Uniform):
        lo, hi = sorted((dist.min, dist.max))
        value = float(rng.integers(math.ceil(lo), math.floor(hi) + 1)) if integer else float(rng.uniform(lo, hi))
    elif isinstance(dist, LogNormal):
        value = float(
            rng.lognormal(math.log(dist.mean * dist.median_ratio), math.sqrt(-2.0 * math.log(dist.median_ratio)))
        )
    else:
        value = float(rng.exponential(dist.mean))
    cap = dist.max if isinstance(dist, (LogNormal, Exponential)) else None
    if cap is not None:
        value = min(value, cap)
    return float(max(1, math.floor(value + 0.5))) if integer else value


def mean_of(dist: Distribution) -> float:
    """The distribution's mean (before ``max`` clips it)."""
    if isinstance(dist, Constant):
        return dist.value
    if isinstance(dist, Uniform):
        return (dist.min + dist.max) / 2
    return dist.mean


def session_shape(spec: SyntheticSessions) -> tuple[float, float, float]:
    """(mean main-agent turns, mean answer tokens, mean think time): for time estimates only."""
    return mean_of(spec.turns), mean_of(spec.output_tokens), mean_of(spec.think_time_s)


# --- scripts: every length and every input token of a session, fixed before the run ---------------


@dataclass(frozen=True)
class TurnScript:
    new_ids: tuple[int, ...]  # input appended to the context before this turn
    osl: int  # the answer's exact length
    think_s: float  # pause before this turn (0 for an agent's first turn)
    fork: tuple[AgentScript, ...] = ()  # sub-agents started after this turn's answer


@dataclass(frozen=True)
class AgentScript:
    agent: int  # 0 = main; sub-agents 1.. in fork order within the session
    turns: tuple[TurnScript, ...]


@dataclass(frozen=True)
class SessionScript:
    session: int
    main: AgentScript

    def agents(self) -> list[AgentScript]:
        out, stack = [], [self.main]
        while stack:
            agent = stack.pop(0)
            out.append(agent)
            stack.extend(child for turn in agent.turns for child in turn.fork)
        return out

    @property
    def n_turns(self) -> int:
        return sum(len(a.turns) for a in self.agents())


def name_seed(seed: int, name: str) -> list[int]:
    return [seed, zlib.crc32(name.encode())]


def shared_prefix_ids(
    spec: SyntheticSessions, seed: int, workload: str, vocab_size: int, exclude: frozenset[int] = frozenset()
) -> list[int]:
    """The workload's shared prefix: the same at every point (an agent's system prompt stays hot in a server)."""
    if spec.shared_prefix_tokens == 0:
        return []
    return random_token_ids(
        1, spec.shared_prefix_tokens, vocab_size, [*name_seed(seed, workload), PREFIX_STREAM], exclude
    )[0]


def session_script(
    spec: SyntheticSessions,
    seed: int,
    point_id: str,
    session: int,
    vocab_size: int,
    max_context: int,
    exclude: frozenset[int] = frozenset(),
) -> SessionScript:
    """Session ``session`` of a point: the same for every server and any session count.

    Seeded by the point id, so each concurrency of a workload draws its own sessions from the same
    distributions: a server's prefix cache never serves one point's turns from an earlier point's
    identical session. Turns that would not fit ``max_context`` (prompt + answer, in tokens) end
    their agent early; a fork whose first sub-agent turn would not fit is dropped.
    """
    base = [*name_seed(seed, point_id), session]
    rng = np.random.default_rng(base)
    counter = iter(range(1, 1 << 30))

    def ids(agent: int, turn: int, n: int) -> tuple[int, ...]:
        return tuple(random_token_ids(1, n, vocab_size, [*base, agent, turn], exclude)[0]) if n else ()

    def agent_script(agent: int, context: int, n_turns: int, first_input: int, depth: int) -> tuple[AgentScript, int]:
        turns: list[TurnScript] = []
        for k in range(n_turns):
            new = first_input if k == 0 else int(sample(spec.input_tokens, rng, integer=True))
            osl = int(sample(spec.output_tokens, rng, integer=True))
            think = 0.0 if k == 0 else sample(spec.think_time_s, rng, integer=False)
            if context + new + osl > max_context:
                break
            context += new + osl
            children: list[AgentScript] = []
            fan = spec.fanout
            if fan is not None and depth == 0 and k < n_turns - 1 and rng.random() < fan.probability:
                width = int(sample(fan.width, rng, integer=True))
                for _ in range(width):
                    child_id = next(counter)
                    child_turns = int(sample(fan.turns, rng, integer=True))
                    task = int(sample(fan.input_tokens, rng, integer=True))
                    child, _ = agent_script(child_id, context, child_turns, task, depth + 1)
                    if child.turns:
                        children.append(child)
                context += sum(c.turns[-1].osl for c in children)  # the parent's next input: their answers
            turns.append(TurnScript(ids(agent, k, new), osl, think, tuple(children)))
        return AgentScript(agent, tuple(turns)), context

    n_turns = int(sample(spec.turns, rng, integer=True))
    first = int(sample(spec.first_input_tokens, rng, integer=True))
    main, _ = agent_script(0, spec.shared_prefix_tokens, n_turns, first, 0)
    return SessionScript(session, main)


# --- the run -----------------------------------------------------------------------------------


class _Runner:
    def __init__(self, client: StreamingClient, prefix: Sequence[int], progress: Progress) -> None:
        self.client, self.prefix, self.progress = client, list(prefix), progress
        self.records: list[RequestRow] = []

    def _record(
        self,
        script: SessionScript,
        agent: int,
        turn: int,
        parent_turn: int,
        warmup: bool,
        prompt_len: int,
        osl: int,
        think: float,
        reusable: int,
    ) -> RequestRow:
        record = RequestRow(
            request_index=len(self.records),
            wave=-1,
            warmup=warmup,
            expected_n_in=prompt_len,
            session=script.session,
            agent=agent,
            turn=turn,
            parent_turn=parent_turn,
            expected_n_out=osl,
            think_s=think,
            reusable_tokens=reusable,
        )
        self.records.append(record)
        return record

    async def agent(
        self, script: SessionScript, agent: AgentScript, context: list[int], parent_turn: int, warmup: bool
    ) -> list[int] | None:
        """Run one agent's turns from ``context``; its last answer's ids, or None if a turn failed."""
        answer: list[int] = []
        extra: list[int] = []  # the sub-agents' answers of the previous fork
        for k, turn in enumerate(agent.turns):
            if k > 0 and turn.think_s > 0:
                await asyncio.sleep(turn.think_s)
            seen = len(context)  # the shared prefix, or the agent's context: sent or generated before
            prompt = context + extra + list(turn.new_ids)
            record = self._record(
                script, agent.agent, k, parent_turn, warmup, len(prompt), turn.osl, turn.think_s, seen
            )
            answer = []
            await self.client.send(prompt, record, osl=turn.osl, output_ids=answer)
            self.progress(1)
            if record.error is None and len(answer) != record.n_out:
                record.error = (
                    f"the server returned {len(answer)} token ids for {record.n_out} tokens (return_token_ids)"
                )
            if record.error is not None:
                return None
            context = prompt + answer
            extra = []
            if turn.fork:
                results = await asyncio.gather(*(self.agent(script, child, context, k, warmup) for child in turn.fork))
                if any(r is None for r in results):
                    return None
                extra = [t for r in results for t in (r or [])]
        return answer

    async def session(self, script: SessionScript, warmup: bool) -> None:
        await self.agent(script, script.main, list(self.prefix), -1, warmup)


async def _run(
    base_url: str,
    model: str,
    point: BenchPoint,
    prefix: Sequence[int],
    scripts: Sequence[SessionScript],
    progress: Progress,
    timeout_s: float,
) -> PointRun:
    monitor = LoadMonitor()
    async with StreamingClient(base_url, model, "completions", 1, timeout_s=timeout_s) as client:
        runner = _Runner(client, prefix, progress)
        queue = iter(enumerate(scripts))

        async def worker() -> None:
            for i, script in queue:  # a shared iterator: each session is run by exactly one worker
                await runner.session(script, warmup=i < point.warmup_sessions)

        monitor.start()
        t_start = time.perf_counter_ns()
        await asyncio.gather(*(worker() for _ in range(min(point.concurrency or 1, len(scripts)))))
        t_end = time.perf_counter_ns()
        await monitor.stop()
    return PointRun(
        list(runner.records),
        t_start,
        t_end,
        monitor.cpu_share,
        percentile(monitor.lags_s, 99),
        max(monitor.lags_s) if monitor.lags_s else None,
    )


def run_agentic_point(
    base_url: str,
    model: str,
    point: BenchPoint,
    prefix: Sequence[int],
    scripts: Sequence[SessionScript],
    progress: Progress = lambda _: None,
    timeout_s: float = 3600.0,
) -> PointRun:
    """Run the sessions (warm-up sessions first) in a fresh event loop; one ``RequestRow`` per turn sent.

    A failed turn ends its agent (and so its session's remaining turns): the turns that were not
    sent have no row; the failed one has its error.
    """
    if len(scripts) != point.warmup_sessions + point.sessions:
        raise ValueError(
            f"{point.point_id} needs {point.warmup_sessions + point.sessions} sessions, got {len(scripts)}"
        )
    coro = _run(base_url, model, point, prefix, scripts, progress, timeout_s)
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)


def scripts_for(
    point: BenchPoint, spec: SyntheticSessions, vocab_size: int, exclude: frozenset[int] = frozenset()
) -> tuple[list[int], list[SessionScript]]:
    """The shared prefix and the point's sessions (warm-up sessions first, numbered from ``WARMUP_SESSION_BASE``)."""
    if point.max_context is None:
        raise ValueError(f"{point.point_id} has no max_context: the sessions cannot be cut to fit")
    prefix = shared_prefix_ids(spec, point.prompt_seed, point.workload, vocab_size, exclude)
    warmup = [
        session_script(
            spec, point.prompt_seed, point.point_id, WARMUP_SESSION_BASE + i, vocab_size, point.max_context, exclude
        )
        for i in range(point.warmup_sessions)
    ]
    measured = [
        session_script(spec, point.prompt_seed, point.point_id, i, vocab_size, point.max_context, exclude)
        for i in range(point.sessions)
    ]
    return prefix, warmup + measured
