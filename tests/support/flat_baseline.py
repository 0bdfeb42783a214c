"""A numerics plan with a flat baseline beside a peaked one, over loopback fakes (``FakeVllm``; launched
by ``tests.support.fake_launch``): what ``byog run`` and ``byog check numerics`` do with a baseline whose
next-token distributions are flat (random weights), no vLLM.

The plan is the CPU integration test's shape: ``stock`` (peaked) with its candidate ``cand``;
``dummy`` (flat, ``FakeVllm(logit_scale=FLAT)``) with its candidate ``dummy-compiled``; each baseline
gets a derived control and envelope variant. ``stock``'s control is a larger numerical change than
its envelope, so ``stock`` is sensitive; everything of ``dummy``'s must never be launched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.core.paths import RunDir
from byog.pipeline.numerics import baseline_is_flat, numerics_done, skipped_as_insensitive
from byog.plans.load import parse_plan
from byog.schemas.server import Endpoint
from tests.support.fake_vllm import FLAT, FakeVllm

PLAN = """\
name: numerics-flat
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  stock: {args: [--enforce-eager]}
  cand: {}
  dummy: {args: [--enforce-eager, --load-format, dummy]}
  dummy-compiled: {args: [--load-format, dummy]}
baseline: stock
pairs:
  - {candidate: cand, baseline: stock}
  - {candidate: dummy-compiled, baseline: dummy}
numerics:
  {random_prompts: 2, random_isl: 32, dataset_prompts: 1, dataset_isl: 64, contexts: [200], max_tokens: 8,
   control: {args: [--dtype, bfloat16]}, envelope_variant: {args: [--max-num-batched-tokens, "64"]},
   conformance: false}
"""
SENSITIVE = ["stock", "stock.control", "stock.variant", "cand"]
SKIPPED = ["dummy.control", "dummy.variant", "dummy-compiled"]  # dummy's: its distributions are flat


@contextmanager
def fakes() -> Iterator[dict[str, FakeVllm]]:
    """One fake per server of ``PLAN``, derived ones included; closed when the block ends."""
    made = {
        "stock": FakeVllm(noise=0.01),
        "stock.control": FakeVllm(noise=0.4),
        "stock.variant": FakeVllm(noise=0.01),
        "cand": FakeVllm(noise=0.01),
        "dummy": FakeVllm(noise=0.01, logit_scale=FLAT),
        **{name: FakeVllm(noise=0.01, logit_scale=FLAT) for name in SKIPPED},
    }
    try:
        yield made
    finally:
        for fake in made.values():
            fake.close()


def new_run_dir(root: Path) -> RunDir:
    rd = RunDir(root)
    rd.root.mkdir(parents=True)
    rd.plan_yaml.write_text(PLAN)
    return rd


def endpoints(made: dict[str, FakeVllm]) -> dict[str, Endpoint]:
    return {name: Endpoint(base_url=fake.base_url, model="fake") for name, fake in made.items()}


def assert_only_the_flat_baselines_work_skipped(rd: RunDir, made: dict[str, FakeVllm]) -> None:
    """dummy's control, variant and candidate: done without a request, a server folder or numerics;
    stock's all ran. The summary: dummy insensitive because flat, its candidate "insensitive"."""
    plan = parse_plan(PLAN, "plan.yaml")
    for name in SKIPPED:
        assert skipped_as_insensitive(plan, name, rd) and numerics_done(plan, name, rd), name
        assert made[name].requests == [], name
        assert not rd.server_dir(name).exists() and not rd.numerics_dir(name).exists(), name
    for name in SENSITIVE:
        assert not skipped_as_insensitive(plan, name, rd) and rd.numerics_complete(name), name
        assert made[name].requests, name
    assert rd.numerics_complete("dummy") and baseline_is_flat(plan, "dummy", rd)
    numerics = derive_summary(rd).numerics
    assert numerics is not None
    sensitivity = {s.baseline: s for s in numerics.sensitivity}
    assert not sensitivity["dummy"].sensitive and "flat" in sensitivity["dummy"].reason
    assert sensitivity["stock"].sensitive
    verdicts = {c.candidate: c.verdict for c in numerics.comparisons}
    assert verdicts == {"cand": "numerically equivalent", "dummy-compiled": "insensitive"}
