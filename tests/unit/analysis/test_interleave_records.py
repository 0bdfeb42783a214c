"""An interleaved pair's order is read from its records: rows' times and the servers' swaps. Each
hostile case edits a real interleaved run (byog's Pair against two loopback fakes) the way a
contributor's own tools could, and must fail in one sentence, and lose the paired bootstrap."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from byog.analysis.bench_summary import summarize_bench
from byog.analysis.interleave_records import check_interleaving
from byog.bundles.checks.base import VerifyContext
from byog.bundles.checks.records import records_are_possible
from byog.core.io import atomic_write_json, read_json
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.schemas.bench import read_request_rows, write_request_rows
from tests.support.interleave_run import SWEEP_PLAN, interleaved_sweep

pytestmark = pytest.mark.serial  # a real bench against loopback fakes


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("interleaved")
    interleaved_sweep(folder)
    return folder


def _batch_id() -> str:
    return next(p.point_id for p in expand_plan(parse_plan(SWEEP_PLAN, "plan.yaml")) if p.kind == "batch")


def _rewrite_rows(rd: RunDir, server: str, change: Callable[[Any], dict[str, Any]]) -> None:
    path = rd.bench_rows(server, _batch_id())
    write_request_rows(path, [row.model_copy(update=change(row)) for row in read_request_rows(path)])


def abab_order(rd: RunDir) -> None:
    """The sides alternate A B A B: base on the even visits, cand on the odd ones (times follow the labels)."""
    relabel = {0: 0, 3: 2, 4: 4, 7: 6, 1: 1, 2: 3, 5: 5, 6: 7}
    for server in ("base", "cand"):
        _rewrite_rows(rd, server, lambda r: {"interleave_seq": relabel[r.interleave_seq]})


def labels_over_sequential_times(rd: RunDir) -> None:
    """ABBA labels kept, but every cand row moved after every base row: two sequential runs."""
    later = 10**12
    _rewrite_rows(
        rd, "cand", lambda r: {"t_send_ns": r.t_send_ns + later, "chunk_t_ns": [t + later for t in r.chunk_t_ns]}
    )


def labels_on_a_sequential_plan(rd: RunDir) -> None:
    (rd.root / "plan.yaml").write_text(SWEEP_PLAN.replace("interleave: true", "interleave: false"))


def _edit_swaps(rd: RunDir, server: str, change: Callable[[list[dict[str, Any]]], None]) -> None:
    record = read_json(rd.server_record(server))
    change(record["sleep_mode"]["swaps"])
    atomic_write_json(rd.server_record(server), record)


def sleep_before_the_previous_wake(rd: RunDir) -> None:
    """cand's swap before visit 1 ends an hour later than recorded: base was put to sleep again (visit 3)
    before it had been woken."""
    _edit_swaps(rd, "cand", lambda swaps: swaps[0].update(wake_s=swaps[0]["wake_s"] + 3600))


def a_swap_left_out(rd: RunDir) -> None:
    _edit_swaps(rd, "cand", lambda swaps: swaps.pop(0))


HOSTILE: dict[str, tuple[Callable[[RunDir], None], str]] = {
    "ABAB order": (abab_order, "labels visit 2, which ABBA gives side B"),
    "ABBA labels over sequential times": (labels_over_sequential_times, "not measured in the order their labels say"),
    "labels on a sequential plan": (labels_on_a_sequential_plan, "carry interleave labels, but the plan runs it"),
    "sleep before the other's wake": (sleep_before_the_previous_wake, "before the swap before visit 1 had woken it"),
    "a swap left out": (a_swap_left_out, "no swap woke cand before visit 1"),
}


def test_the_run_byog_wrote_holds(original: Path) -> None:
    rd = RunDir(original)
    plan = parse_plan(SWEEP_PLAN, "plan.yaml")
    found = check_interleaving(rd, plan)
    assert found.problems == [] and ("cand", _batch_id()) in found.held


@pytest.mark.parametrize("case", list(HOSTILE))
def test_an_order_the_records_do_not_show_fails_and_is_not_paired(original: Path, tmp_path: Path, case: str) -> None:
    edit, sentence = HOSTILE[case]
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
    assert units[_batch_id()] != "ABBA blocks"  # the labels alone no longer switch the CI to the paired bootstrap
