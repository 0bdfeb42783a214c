"""The agentic workload without vLLM: session scripts (seeded, bounded) and the runner against a recording fake.

The fake is an aiohttp server that streams vLLM's SSE shape with ``token_ids`` (as vLLM does for
``return_token_ids``) and reports ``prompt_tokens_details.cached_tokens`` as the longest prefix,
in whole 16-token blocks, it has seen before; it records every prompt it was sent, so the tests
can check what the client actually sent: each turn's prompt is the previous prompt + the answer
+ the new input, sub-agents start from their parent's context, and turns of one session never
overlap.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from byog.bench.agentic import run_agentic_point, sample, scripts_for, session_script
from byog.schemas.bench import BenchPoint
from byog.schemas.plan import (
    Constant,
    FanOut,
    LogNormal,
    RandomPrompts,
    SyntheticSessions,
    Uniform,
)

VOCAB = 5000
BLOCK = 16


def apoint(
    spec: SyntheticSessions, concurrency: int, sessions: int, warmup: int = 0, seed: int = 0, max_context: int = 2048
) -> BenchPoint:
    return BenchPoint(
        point_id=f"agentic-c{concurrency}",
        workload="agentic",
        kind="agentic",
        concurrency=concurrency,
        isl=0,
        osl=0,
        prompts=RandomPrompts(),
        prompt_seed=seed,
        source=spec,
        sessions=sessions,
        warmup_sessions=warmup,
        max_context=max_context,
    )


def small_spec(**over: Any) -> SyntheticSessions:
    base: dict[str, Any] = dict(
        turns=Uniform(min=3, max=4),
        shared_prefix_tokens=40,
        first_input_tokens=Uniform(min=20, max=30),
        input_tokens=Uniform(min=5, max=9),
        output_tokens=Uniform(min=4, max=6),
        think_time_s=Constant(value=0.02),
        fanout=FanOut(
            probability=0.5, width=Constant(value=2), turns=Constant(value=2), input_tokens=Constant(value=7)
        ),
    )
    base.update(over)
    return SyntheticSessions(**base)


def test_distributions_sample_their_stated_shape() -> None:
    rng = np.random.default_rng(0)
    draws = [sample(LogNormal(mean=100.0), rng, integer=False) for _ in range(20000)]
    assert abs(np.mean(draws) / 100.0 - 1) < 0.03  # the mean is the parameter
    assert abs(np.median(draws) / 85.0 - 1) < 0.05  # median = mean x median_ratio (0.85)
    assert max(sample(LogNormal(mean=100.0, max=120.0), rng, integer=False) for _ in range(2000)) == 120.0
    ints = {int(sample(Uniform(min=2, max=4), rng, integer=True)) for _ in range(500)}
    assert ints == {2, 3, 4}  # both ends included
    assert sample(Constant(value=0.2), rng, integer=True) == 1.0  # token counts are at least 1


def test_session_scripts_are_seeded_per_session_and_fit_the_context() -> None:
    spec = small_spec()
    a = session_script(spec, 7, "agentic-c1", 3, VOCAB, 2048)
    assert a == session_script(spec, 7, "agentic-c1", 3, VOCAB, 2048)  # same seed, point, session: same script
    assert a != session_script(spec, 8, "agentic-c1", 3, VOCAB, 2048) and a != session_script(
        spec, 7, "agentic-c1", 4, VOCAB, 2048
    )
    assert a != session_script(
        spec, 7, "agentic-c4", 3, VOCAB, 2048
    )  # another point: other sessions, no cross-point hits
    # session i does not depend on how many sessions a point asks for
    prefix, scripts = scripts_for(apoint(spec, 1, 5, seed=7), spec, VOCAB)
    assert scripts[3] == a
    assert scripts_for(apoint(spec, 4, 5, seed=7), spec, VOCAB)[0] == prefix  # one system prompt at every point
    # every prompt + answer fits max_context; a tight limit ends sessions early, never overflows
    for limit in (2048, 120):
        for i in range(20):
            s = session_script(spec, 1, "w", i, VOCAB, limit)
            for agent, lengths in _context_lengths(s, spec.shared_prefix_tokens).items():
                assert all(n <= limit for n in lengths), (limit, i, agent)


def _context_lengths(script: Any, prefix: int) -> dict[int, list[int]]:
    """prompt + answer length of each turn, per agent, from the script alone."""
    out: dict[int, list[int]] = {}

    def walk(agent: Any, context: int) -> int:
        extra = 0
        for turn in agent.turns:
            context += extra + len(turn.new_ids)
            out.setdefault(agent.agent, []).append(context + turn.osl)
            context += turn.osl
            extra = sum(walk(child, context) for child in turn.fork)
        return agent.turns[-1].osl if agent.turns else 0

    walk(script.main, prefix)
    return out


# --- the recording fake server ----------------------------------------------------------------


class RecordingFake:
    def __init__(self) -> None:
        self.prompts: list[list[int]] = []
        self.intervals: list[tuple[float, float, int]] = []  # (start, end, request number)
        self.blocks: set[tuple[int, ...]] = set()
        self.loop = asyncio.new_event_loop()
        self.base_url = ""
        self._runner: Any = None

    def cached(self, prompt: list[int]) -> int:
        n = 0
        while n + BLOCK <= len(prompt) and tuple(prompt[: n + BLOCK]) in self.blocks:
            n += BLOCK
        return n

    async def completions(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        prompt, osl = list(body["prompt"]), int(body["max_tokens"])
        number, start = len(self.prompts), time.monotonic()
        self.prompts.append(prompt)
        cached = self.cached(prompt)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        answer = [(sum(prompt) + 31 * j) % (VOCAB - 300) + 300 for j in range(osl)]
        for j, token in enumerate(answer):
            await asyncio.sleep(0.001)
            choice = {"index": 0, "text": "x", "token_ids": [token], "finish_reason": None}
            if j == 0 and body.get("return_token_ids"):
                choice["prompt_token_ids"] = prompt
            usage = {"prompt_tokens": len(prompt), "completion_tokens": j + 1, "total_tokens": len(prompt) + j + 1}
            await response.write(b"data: " + json.dumps({"choices": [choice], "usage": usage}).encode() + b"\n\n")
        full = prompt + answer  # decode blocks are cached too, as in vLLM
        for n in range(BLOCK, len(full) + 1, BLOCK):
            self.blocks.add(tuple(full[:n]))
        usage = {
            "prompt_tokens": len(prompt),
            "completion_tokens": osl,
            "total_tokens": len(prompt) + osl,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        await response.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\ndata: [DONE]\n\n")
        self.intervals.append((start, time.monotonic(), number))
        return response

    async def _start(self) -> None:
        from aiohttp import web

        app = web.Application()
        app.router.add_post("/v1/completions", self.completions)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

    def __enter__(self) -> RecordingFake:
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture
def fake() -> Iterator[RecordingFake]:
    with RecordingFake() as server:
        yield server


def test_each_turn_resends_the_context_plus_the_answer_plus_new_input(fake: RecordingFake) -> None:
    spec = small_spec()
    point = apoint(spec, 2, 4, warmup=1, seed=3)
    prefix, scripts = scripts_for(point, spec, VOCAB)
    run = run_agentic_point(fake.base_url, "fake", point, prefix, scripts)
    records = run.records
    assert len(records) == sum(s.n_turns for s in scripts) == len(fake.prompts)
    assert all(r.error is None and r.n_out == r.expected_n_out and r.n_in == r.expected_n_in for r in records)
    assert sum(r.warmup for r in records) == scripts[0].n_turns
    by_key = {(r.session, r.agent, r.turn): r for r in records}
    # What the server received for each turn: the one prompt ending with that turn's new input (random
    # ids). Not by send order: two sessions in flight can reach the server in either order.
    sent: dict[int, list[int]] = {}
    for script in scripts:
        for agent in script.agents():
            for k, turn in enumerate(agent.turns):
                r = by_key[(script.session, agent.agent, k)]
                (sent[r.request_index],) = [
                    p for p in fake.prompts if p[len(p) - len(turn.new_ids) :] == list(turn.new_ids)
                ]
                assert len(sent[r.request_index]) == r.n_in
    forks = 0
    for script in scripts:
        for agent in script.agents():
            for k in range(len(agent.turns)):
                r = by_key[(script.session, agent.agent, k)]
                prompt = sent[r.request_index]
                if agent.agent == 0 and k == 0:
                    assert prompt[: len(prefix)] == prefix  # every session starts from the shared prefix
                    continue
                if k == 0:  # a sub-agent: its parent's prompt + answer, then its task
                    parent = sent[by_key[(script.session, 0, r.parent_turn)].request_index]
                    forks += 1
                else:
                    parent = sent[by_key[(script.session, agent.agent, k - 1)].request_index]
                previous = by_key[(script.session, 0 if k == 0 else agent.agent, r.parent_turn if k == 0 else k - 1)]
                assert prompt[: len(parent)] == parent  # the context grows: the previous prompt is a prefix ...
                answer = prompt[len(parent) : len(parent) + previous.n_out]
                assert len(answer) == previous.n_out  # ... followed by the model's answer, token for token
                assert r.reusable_tokens == len(parent) + previous.n_out
    assert forks > 0  # the seed forks at least once
    # the cache: later turns hit (whole blocks of the context), reported per turn
    later = [r for r in records if r.turn > 0]
    assert all(r.cached_tokens is not None and r.cached_tokens >= (r.reusable_tokens // BLOCK) * BLOCK for r in later)
    assert sum(r.cached_tokens or 0 for r in later) > 0


def test_turns_of_one_agent_never_overlap_and_pause_for_their_think_time(fake: RecordingFake) -> None:
    spec = small_spec(think_time_s=Constant(value=0.05), fanout=None)
    point = apoint(spec, 3, 3, seed=5)
    prefix, scripts = scripts_for(point, spec, VOCAB)
    records = run_agentic_point(fake.base_url, "fake", point, prefix, scripts).records
    for session in {r.session for r in records}:
        turns = sorted((r for r in records if r.session == session), key=lambda r: r.turn)
        for a, b in pairwise(turns):
            assert b.t_send_ns - a.chunk_t_ns[-1] >= 0.05e9 * 0.95  # sent after the answer + the pause
    # three sessions in flight: their first turns were all sent before any session's second turn
    firsts = [r.t_send_ns for r in records if r.turn == 0]
    seconds = [r.t_send_ns for r in records if r.turn == 1]
    assert max(firsts) < min(seconds)


def test_a_failed_turn_ends_its_session_and_says_why() -> None:
    spec = small_spec(fanout=None)
    point = apoint(spec, 1, 2, seed=5)
    prefix, scripts = scripts_for(point, spec, VOCAB)
    run = run_agentic_point(
        "http://127.0.0.1:1", "fake", point, prefix, scripts, timeout_s=2.0
    )  # nothing listens there
    assert len(run.records) == 2  # one failed first turn per session, nothing after it
    assert all(r.error and r.turn == 0 for r in run.records)


def test_validity_holds_each_turn_to_its_own_length_and_expects_cache_hits() -> None:
    from byog.analysis import counters as sm
    from byog.analysis.validity import invalid_reasons
    from byog.schemas.bench import PointRecord, RequestRow

    def row(i: int, n_out: int, expected: int | None) -> RequestRow:
        return RequestRow(
            request_index=i,
            wave=-1,
            warmup=False,
            expected_n_in=10,
            t_send_ns=0,
            chunk_t_ns=[1, 2],
            chunk_tokens=[1, n_out - 1],
            n_in=10,
            n_out=n_out,
            expected_n_out=expected,
            session=0,
            turn=i,
        )

    def record(point: BenchPoint) -> PointRecord:
        return PointRecord(
            server="s",
            point=point,
            prompts_label="random-ids",
            status="complete",
            started_at="x",
            duration_s=1.0,
            t_start_ns=0,
            t_end_ns=1,
            byog_version="t",
            counter_deltas={sm.PREFIX_CACHE_HITS: 64.0, sm.GENERATION_TOKENS: 14.0},
        )

    agentic = apoint(small_spec(), 1, 1)
    assert invalid_reasons(record(agentic), [row(0, 6, 6), row(1, 8, 8)]) == []  # hits are what agents want
    stale = row(1, 8, 8).model_copy(update={"cached_tokens": 64, "reusable_tokens": 40})
    assert invalid_reasons(record(agentic), [row(0, 6, 6), stale]) == [
        "1 turns were served more cached tokens than the workload shares (cached, shareable: (64, 40)): the server's "
        "cache held these prompts from before, e.g. the same sessions measured earlier on this server"
    ]
    bad = invalid_reasons(record(agentic), [row(0, 6, 6), row(1, 8, 9)])
    assert bad == ["1 turns returned n_out != their OSL (returned, expected: (8, 9))"]
    batch = BenchPoint(
        point_id="d-b1",
        workload="d",
        kind="concurrency",
        concurrency=1,
        isl=10,
        osl=6,
        prompts=RandomPrompts(),
        num_prompts=2,
    )
    reasons = invalid_reasons(record(batch), [row(0, 6, None), row(1, 8, None)])
    assert any(r.startswith("prefix cache hit 64 prompt tokens") for r in reasons)  # elsewhere a hit skews TTFT
    assert any(r.startswith("1 requests returned n_out != OSL 6") for r in reasons)
