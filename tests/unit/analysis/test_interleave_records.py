"""An interleaved pair's order is read from its records: rows' times and the servers' swaps. Each
hostile case edits a real interleaved run (byog's Pair against two loopback fakes) the way a
contributor's own tools could, and must fail in one sentence, and lose the paired bootstrap."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from byog.analysis.bench_summary import summarize_bench
from byog.analysis.interleave_records import check_interleaving
from byog.bundles.checks.base import VerifyContext
from byog.bundles.checks.records import records_are_possible
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from tests.support.hostile_47 import HOSTILE_ORDERS, batch_id
from tests.support.interleave_run import SWEEP_PLAN, interleaved_sweep

pytestmark = pytest.mark.serial  # a real bench against loopback fakes


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("interleaved")
    interleaved_sweep(folder)
    return folder


def test_the_run_byog_wrote_holds(original: Path) -> None:
    rd = RunDir(original)
    plan = parse_plan(SWEEP_PLAN, "plan.yaml")
    found = check_interleaving(rd, plan)
    assert found.problems == [] and ("cand", batch_id()) in found.held


@pytest.mark.parametrize("case", list(HOSTILE_ORDERS))
def test_an_order_the_records_do_not_show_fails_and_is_not_paired(original: Path, tmp_path: Path, case: str) -> None:
    edit, sentence = HOSTILE_ORDERS[case]
    shutil.copytree(original, tmp_path / "run")
    rd = RunDir(tmp_path / "run")
    edit(rd)
    plan = parse_plan((rd.root / "plan.yaml").read_text(), "plan.yaml")
    problems = check_interleaving(rd, plan).problems
    assert problems and sentence in problems[0] and "\n" not in problems[0], problems
    ctx = VerifyContext(bundle=tmp_path / "b.tar.gz", root=rd.root, names=[])
    verdict = records_are_possible(ctx)
    assert verdict.failed and sentence in verdict.message  # type: ignore[union-attr]
    units = {c.point_id: c.units for c in summarize_bench(rd, plan).comparisons if c.metric == "decode_tok_s"}
    assert units[batch_id()] != "ABBA blocks"  # the labels alone no longer switch the CI to the paired bootstrap
