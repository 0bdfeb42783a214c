"""The numerics runner end to end against a stand-in server: passes, files, record, verdicts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from byog.analysis.summary import derive_summary
from byog.core.errors import UsageError
from byog.core.io import atomic_write_text
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.pipeline.numerics import numerics_done, references, run_numerics, run_numerics_for_server, server_order
from byog.plans.load import parse_plan
from byog.schemas.server import Endpoint
from tests.support import flat_baseline
from tests.support.fake_vllm import FakeVllm

PLAN = """\
name: numerics-fake
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  cand: {}
  stock: {args: [--enforce-eager]}
  changed: {}
baseline: stock
numerics:
  {random_prompts: 2, random_isl: 32, dataset_prompts: 1, dataset_isl: 64, contexts: [200], max_tokens: 8,
   envelope_variant: {args: [--max-num-batched-tokens, "64"]}}
"""


@pytest.fixture()
def servers() -> Iterator[dict[str, FakeVllm]]:
    fakes = {
        "stock": FakeVllm(noise=0.01),
        "stock.control": FakeVllm(noise=0.4),
        "stock.variant": FakeVllm(noise=0.01),
        "cand": FakeVllm(noise=0.01),
        "changed": FakeVllm(noise=0.4),
    }
    yield fakes
    for fake in fakes.values():
        fake.close()


def test_baseline_first_then_candidates_on_its_paths(servers: dict[str, FakeVllm], tmp_path: Path) -> None:
    plan = parse_plan(PLAN, "plan")
    # the control (default --dtype float16) and the envelope variant are derived from the baseline, right after it
    assert server_order(plan) == ["stock", "stock.control", "stock.variant", "cand", "changed"]
    assert references(plan) == {s: "stock" for s in ("stock", "stock.control", "stock.variant", "cand", "changed")}
    rd = RunDir(tmp_path / "run")
    atomic_write_text(rd.plan_yaml, PLAN)
    console = NullReporter()
    endpoint = {name: Endpoint(base_url=fake.base_url, model="fake") for name, fake in servers.items()}
    with pytest.raises(UsageError, match="run 'stock' first"):
        run_numerics(plan, "cand", endpoint["cand"], rd, None, console)
    for name in server_order(plan):
        run_numerics(plan, name, endpoint[name], rd, None, console)

    record = json.loads((rd.numerics_dir("stock") / "record.json").read_text())
    assert record["plain_decode_wall_s"] > 0 and [p["name"] for p in record["passes"]] == ["alone", "together"]
    prompts = {r["prompt"]: r["ids"] for r in record["prompts"]}
    assert {p: len(ids) for p, ids in prompts.items()} == {
        "random-0": 32,
        "random-1": 32,
        "gsm8k-0": 64,
        "long-200": 200 - 8,
    }
    rows = pq.read_table(rd.numerics_rows("stock", "alone")).to_pylist()
    assert sum(r["output"] for r in rows) == 4 * 8 and all(len(r["top_ids"]) == 5 for r in rows)
    assert sum(not r["output"] for r in rows) == sum(len(ids) - 1 for ids in prompts.values())
    assert sorted(p.name for p in rd.numerics_dir("cand").iterdir()) == ["record.json", "together.parquet"]
    # the candidate sends exactly the baseline's prompts, each once, with both kinds of logprobs
    sent = [r for r in servers["cand"].requests if r.get("prompt_logprobs") and r["max_tokens"] == 8]
    assert sorted(tuple(r["prompt"]) for r in sent) == sorted(tuple(ids) for ids in prompts.values())
    assert all(r["logprobs"] == r["prompt_logprobs"] == 5 for r in sent)

    numerics = derive_summary(rd).numerics
    assert numerics is not None
    verdicts = {c.candidate: c.verdict for c in numerics.comparisons}
    assert verdicts["cand"] == "numerically equivalent"
    assert verdicts["changed"] in ("drifts", "diverges")

    # a second call finds the record and sends nothing
    sent = len(servers["stock"].requests)
    run_numerics(plan, "stock", endpoint["stock"], rd, None, console)
    assert len(servers["stock"].requests) == sent


def test_a_flat_baselines_control_variant_and_candidate_are_skipped_as_insensitive(tmp_path: Path) -> None:
    """Random weights (flat next-token distributions) show no kernel change: once the flat baseline's
    passes are in, its control, envelope variant and candidate have nothing left to run; a peaked
    baseline's run as ever."""
    plan = parse_plan(flat_baseline.PLAN, "plan")
    rd = flat_baseline.new_run_dir(tmp_path / "run")
    with flat_baseline.fakes() as made:
        endpoint = flat_baseline.endpoints(made)
        # before the baseline's passes nothing is known: each of them still has its numerics to run
        assert not any(numerics_done(plan, name, rd) for name in flat_baseline.SKIPPED)
        for name in server_order(plan):
            run_numerics_for_server(plan, name, endpoint[name], rd, None, NullReporter())
        flat_baseline.assert_only_the_flat_baselines_work_skipped(rd, made)
