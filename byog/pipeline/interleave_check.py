"""The pre-start refusal of an interleaved pair this host cannot run (no sleep mode, no room for both).

Apart from byog.pipeline.interleave, which runs the pair, so that opening a run directory does not
import the sweep, the evals and the numerics passes to check a plan.
"""

from __future__ import annotations

from byog.core.errors import UsageError
from byog.runtimes import sleep_mode
from byog.schemas.plan import Plan


def check_interleave(plan: Plan, facts: sleep_mode.PlatformFacts | None = None, available: int | None = None) -> None:
    """Refuse, in one sentence, an interleaved pair this host cannot run: no sleep mode, or no room
    for both sides' weights in host memory. ``facts`` and ``available`` default to this host's."""
    pairs = plan.interleaved_pairs
    if not pairs:
        return
    if any(plan.servers[name].runs_this_hosts_vllm for pair in pairs for name in pair):
        facts = facts or sleep_mode.local_platform_facts()
        for candidate, baseline in pairs:
            for name in (baseline, candidate):
                here = plan.servers[name].runs_this_hosts_vllm
                refusal = sleep_mode.platform_refusal(name, facts) if here else None
                if refusal:
                    raise UsageError(refusal)
    weights = sleep_mode.weights_bytes(plan.model.path) if plan.model.path else None
    room = available if available is not None else sleep_mode.available_host_bytes()
    for pair in pairs:
        refusal = sleep_mode.host_memory_refusal(pair, weights, room)
        if refusal:
            raise UsageError(refusal)
