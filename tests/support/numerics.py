"""Synthetic numerics and conformance files in the real formats, for tests that need no server.

Every server answers from the same seeded "true" next-token logits per (prompt, position), plus
Gaussian noise of its own size on the logits: noise 0 is the reference, small noise is batch
variance, larger noise is a numerical change. Prompt tokens are fixed; greedy output tokens are
each server's own argmax, so free-running outputs diverge where the noise flips a near-tie, as
real ones do.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from byog.analysis.numerics import sort_top
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.schemas.numerics import ConformanceRecord, NumericsRecord, write_numerics_rows

VOCAB = 64
K = 5
PROMPTS = {"random-0": 40, "random-1": 40, "long-300": 260}  # prompt -> prompt length
MAX_TOKENS = 24


# A numerics plan over the synthetic servers: a baseline, a same-numerics candidate, a changed one.
PLAN = """\
name: numerics-synthetic
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  stock: {args: [--enforce-eager]}
  same: {}
  changed: {args: [--enforce-eager, --dtype, float32]}
baseline: stock
numerics:
  max_tokens: 24
  control: {args: [--dtype, float32]}                    # the candidate 'changed' is the control too
  envelope_variant: {args: [--max-num-batched-tokens, "64"]}  # derived: stock.variant
"""


def _logprobs(prompt: str, position: int, noise: float, rng: np.random.Generator, scale: float = 2.0) -> np.ndarray:
    base = np.random.default_rng([zlib.crc32(prompt.encode()), position]).normal(0.0, scale, VOCAB)
    logits = base + noise * rng.normal(0.0, 1.0, VOCAB)
    return logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()


def _row(prompt: str, position: int, output: bool, token: int, lp: np.ndarray) -> dict[str, Any]:
    top_ids, top_lps = sort_top({i: float(v) for i, v in enumerate(lp)}, K)
    return {
        "prompt": prompt,
        "position": position,
        "output": output,
        "token": int(token),
        "logprob": float(lp[token]),
        "top_ids": top_ids,
        "top_logprobs": top_lps,
    }


def _prompt_token(prompt: str, position: int) -> int:
    return int(np.random.default_rng([zlib.crc32(prompt.encode()), position, 7]).integers(VOCAB))


def one_pass(noise: float, seed: int, scale: float = 2.0) -> list[dict[str, Any]]:
    """The rows of one pass of a server with this much logit noise: prompt positions, then its greedy output.

    ``scale``: the spread of the true logits (tiny: a flat next-token distribution, as random weights give)."""
    rng = np.random.default_rng(seed)
    rows = []
    for prompt, length in PROMPTS.items():
        for position in range(1, length):
            rows.append(
                _row(
                    prompt,
                    position,
                    False,
                    _prompt_token(prompt, position),
                    _logprobs(prompt, position, noise, rng, scale),
                )
            )
        for position in range(length, length + MAX_TOKENS):
            lp = _logprobs(prompt, position, noise, rng, scale)
            rows.append(_row(prompt, position, True, int(np.argmax(lp)), lp))
    return rows


def write_server(run_dir: RunDir, server: str, reference: str, noise: float, seed: int, scale: float = 2.0) -> None:
    names = ["alone", "together"] if reference == server else ["together"]
    written = {"alone": one_pass(0.0, seed + 1, scale), "together": one_pass(noise, seed, scale)}
    for name in names:
        write_numerics_rows(run_dir.numerics_rows(server, name), written[name])
    record = NumericsRecord(
        server=server,
        reference=reference,
        top_k=K,
        max_tokens=MAX_TOKENS,
        prompts=[
            {"prompt": p, "kind": "long" if p.startswith("long") else "random", "ids": list(range(n))}
            for p, n in PROMPTS.items()
        ],
        passes=[{"name": n, "requests": len(PROMPTS), "positions": len(written[n]), "wall_s": 1.5} for n in names],
        plain_decode_wall_s=2.0 if reference == server else None,
    )
    atomic_write_json(run_dir.numerics_record(server), record.model_dump(mode="json"))


def write_conformance(run_dir: RunDir, server: str, failing: dict[str, str] | None = None) -> None:
    failing = failing or {}
    names = ("stop_string", "max_tokens_exact", "longest_prompt_accepted")
    record = ConformanceRecord(
        server=server,
        longest_prompt=None,
        wall_s=3.0,
        checks=[{"check": n, "passed": n not in failing, "reason": failing.get(n, "ok"), "detail": {}} for n in names],
    )
    atomic_write_json(run_dir.conformance_record(server), record.model_dump(mode="json"))
