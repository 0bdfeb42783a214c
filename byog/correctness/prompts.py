"""The numerics differential's seeded prompt set: random ids, real text, and long contexts.

Three kinds, because each exercises different numerics:

- ``random``: uniform random token ids. Flat, high-entropy next-token distributions: many
  near-ties, so argmax flips show batch noise readily.
- ``dataset``: real text (GSM8K or MT-Bench rows, concatenated to the length asked). Peaked
  distributions, the regime a deployed model lives in.
- ``long``: real text for each context length the plan lists, ``context - max_tokens`` tokens
  long, so the generated tokens end at the context length (a server whose ``--max-model-len``
  is that length accepts it) and a defect that appears only at long context shows in the last
  position buckets.

Prompts depend only on (seed, kind, index or length), so both servers of a comparison get the
same prompts; the baseline's are recorded and the candidate reads them from there. The token
ids come from the bench's prompt builder (passed in as ``PromptBuilder``: bench and correctness
are siblings that do not import each other; the pipeline hands it over).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from byog.correctness.differential import TokenPath
from byog.schemas.plan import NumericsSpec

PromptKind = Literal["random", "dataset", "long"]


class PromptBuilder(Protocol):
    def __call__(self, *, kind: Literal["random", "dataset"], isl: int, count: int, point_id: str) -> list[list[int]]:
        """``count`` prompts of exactly ``isl`` token ids, seeded by ``point_id`` (and the plan's seed)."""
        ...


@dataclass(frozen=True)
class NamedPrompt:
    path: TokenPath
    kind: PromptKind


def long_prompt_length(context: int, max_tokens: int) -> int:
    return context - max_tokens


def build_prompt_set(spec: NumericsSpec, build: PromptBuilder) -> list[NamedPrompt]:
    """Every prompt of the set, named ``random-<i>``, ``<dataset>-<i>``, ``long-<context>``."""
    prompts: list[NamedPrompt] = []
    if spec.random_prompts:
        ids = build(kind="random", isl=spec.random_isl, count=spec.random_prompts, point_id="numerics-random")
        prompts += [NamedPrompt(TokenPath(f"random-{i}", p), "random") for i, p in enumerate(ids)]
    if spec.dataset_prompts:
        ids = build(kind="dataset", isl=spec.dataset_isl, count=spec.dataset_prompts, point_id="numerics-dataset")
        prompts += [NamedPrompt(TokenPath(f"{spec.dataset}-{i}", p), "dataset") for i, p in enumerate(ids)]
    for context in spec.contexts:
        isl = long_prompt_length(context, spec.max_tokens)
        if isl >= 1:
            ids = build(kind="dataset", isl=isl, count=1, point_id=f"numerics-long-{context}")
            prompts.append(NamedPrompt(TokenPath(f"long-{context}", ids[0]), "long"))
    return prompts
