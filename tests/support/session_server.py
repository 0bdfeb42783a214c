"""The session's one CPU vLLM server (fixture ``cpu_server`` in tests/conftest.py), as tests read it.

It is eager SmolLM2 with what the agentic tests need besides (tests/integration/test_agentic_real.py
measures reuse on it): a 32-token KV block, so a 32-token hash block of a trace is one KV block,
and per-request cached-token counts in usage; float32 (CPU_SERVER_ARGS), as every CPU plan's servers, for its
GSM8K prefills (byog/plans/profiles/smoke.yaml says why). None of these changes what the other tests read: tokens,
timing against the server's own counters, evals.
"""

from __future__ import annotations

from byog.plans.init_plan import CPU_SERVER_ARGS

KV_BLOCK = 32
SESSION_SERVER_ARGS = [
    "--enforce-eager",
    *CPU_SERVER_ARGS,
    "--enable-prompt-tokens-details",
    "--block-size",
    str(KV_BLOCK),
]
