"""The tables of a run directory: exactly the declared columns and dtypes, per-request values equal to
the per-request formulas on the raw rows, validity carried from the summary, every launch kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from byog.analysis import metrics
from byog.analysis.frame_columns import TABLES, dtypes
from byog.analysis.frames import RunTables, frame
from byog.analysis.request_columns import read_request_columns
from byog.core.errors import CheckFailed
from byog.core.paths import RunDir
from byog.schemas.bench import read_request_rows
from tests.support.flipped import arithmetic_rows, write_task
from tests.support.report_runs import INVALID_POINT, derive, invalid_run_dir
from tests.support.synthetic import SyntheticSpec, make_run_dir


@pytest.fixture(scope="module")
def invalid(tmp_path_factory: pytest.TempPathFactory) -> RunTables:
    run_dir, _ = invalid_run_dir(tmp_path_factory.mktemp("frames") / "run")
    return RunTables(run_dir, "run")


@pytest.mark.parametrize("table", list(TABLES))
def test_a_table_has_exactly_its_declared_columns_and_dtypes(invalid: RunTables, table: str) -> None:
    data = getattr(invalid, table)()
    assert list(data.columns) == list(dtypes(table))
    assert {name: str(dtype) for name, dtype in data.dtypes.items()} == dtypes(table)
    assert len(data) > 0 and set(data.source) == {"run"}


def test_per_request_values_are_the_per_request_formulas_on_the_raw_rows(invalid: RunTables) -> None:
    requests = invalid.requests().set_index(["server", "point_id", "request_index"])
    run_dir = invalid.run_dir
    for server in ("candidate", "baseline"):
        for point_id in run_dir.bench_point_ids(server):
            for row in read_request_rows(run_dir.bench_rows(server, point_id)):
                got = requests.loc[(server, point_id, row.request_index)]
                assert got.ttft_s == metrics.ttft_s(row) and got.tpot_s == metrics.tpot_s(row)
                assert got.e2e_latency_s == metrics.e2e_latency_s(row)
                assert (got.t_send_ns, got.t_first_ns, got.t_last_ns) == (row.t_send_ns, row.t_first_ns, row.t_last_ns)
                assert (got.wave, bool(got.warmup), got.n_out) == (row.wave, row.warmup, row.n_out)


def test_a_wave_s_tokens_in_window_add_up_to_the_metrics_formula(invalid: RunTables) -> None:
    requests = invalid.requests()
    run_dir = invalid.run_dir
    path = run_dir.bench_rows("baseline", "decode-b4-isl4-osl8")
    columns = read_request_columns(path)
    for wave in sorted(set(columns.wave.tolist())):
        members = columns.take(columns.wave == wave)
        window = metrics.decode_window_ns_columns(members)
        assert window is not None
        mine = requests[
            (requests.server == "baseline") & (requests.point_id == "decode-b4-isl4-osl8") & (requests.wave == wave)
        ]
        assert int(mine.tokens_in_window.sum()) == metrics.tokens_in_window_columns(members, window)
        assert int(mine.chunks_in_window.sum()) / len(mine) == metrics.steps_in_window_columns(members, window)
        assert set(mine.decode_window_start_ns) == {window[0]} and set(mine.decode_window_end_ns) == {window[1]}


def test_an_invalid_point_is_invalid_in_every_table_with_its_reason(invalid: RunTables) -> None:
    points = invalid.points().set_index(["server", "point_id"])
    bad = points.loc[("candidate", INVALID_POINT)]
    assert not bad.valid and "client" in bad.invalid_reasons and bad.client_cpu_share == 0.97
    assert points.loc[("baseline", INVALID_POINT)].valid
    requests = invalid.requests()
    assert not requests[(requests.server == "candidate") & (requests.point_id == INVALID_POINT)].point_valid.any()
    comparisons = invalid.comparisons()
    assert set(comparisons[~comparisons.valid].point_id) == {INVALID_POINT}
    assert set(comparisons.ci_method) == {"bootstrap"} and set(comparisons.resampled) == {"waves"}
    assert comparisons.ci_note.notna().all()  # one launch a side: what the CI leaves out


def test_every_launch_is_kept_and_comparisons_pool_them(tmp_path: Path) -> None:
    spec = SyntheticSpec(batch_sizes=(1,), isl=4, osl=8, warmup_waves=0, waves=2, eval_items=4, log_lines=2, launches=2)
    tables = RunTables(make_run_dir(tmp_path / "run", spec), "run")
    assert sorted(tables.requests().groupby(["server", "launch"]).size().to_dict().items()) == [
        (("baseline", 1), 2),
        (("baseline", 2), 2),
        (("candidate", 1), 2),
        (("candidate", 2), 2),
    ]
    # the synthetic run records launch 1's server.json only
    assert sorted(zip(tables.servers().server, tables.servers().launch.tolist(), strict=True)) == [
        ("baseline", 1),
        ("candidate", 1),
    ]
    assert len(tables.points()) == 4
    comparisons = tables.comparisons()
    assert set(comparisons.ci_method) == {"launch t interval"} and set(comparisons.ci_df) == {2}
    assert set(comparisons.candidate_launches) == {2} == set(comparisons.baseline_launches)


def test_per_request_columns_of_a_real_cpu_run(tmp_path: Path) -> None:
    """The committed CPU run (real vLLM): every ok request's TPOT is positive, the windows hold tokens."""
    run_dir = RunDir(Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "launches-cpu")
    requests = RunTables(run_dir, "launches-cpu").requests()
    ok = requests[requests.ok]
    assert (ok.tpot_s > 0).all() and np.isfinite(ok.ttft_s).all()
    assert (requests.tokens_in_window.dropna() > 0).all()


def test_items_show_answers_and_gold_except_for_a_gated_task(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(batch_sizes=(1,), waves=2, eval_items=6, log_lines=2))
    rows = arithmetic_rows(8)
    for task in ("arithmetic_generated", "gpqa_diamond"):
        write_task(run_dir, "candidate", task, rows, set(range(5)))
        write_task(run_dir, "baseline", task, rows, set(range(1, 6)))
    derive(run_dir)
    items = RunTables(run_dir, "run").items().set_index("task")
    shown = items.loc["arithmetic_generated"]
    assert shown.target.notna().all() and shown.candidate_answers.notna().all() and not shown.gated.any()
    assert list(shown.target) == [str(r["answer"]) for r in sorted(rows, key=lambda r: str(r["id"]))]
    hidden = items.loc["gpqa_diamond"]
    assert hidden.gated.all() and hidden[["target", "candidate_answers", "baseline_answers"]].isna().all().all()
    assert list(hidden.flipped) == list(shown.flipped) and hidden.flipped.sum() == 2


def test_a_number_no_column_can_hold_is_one_sentence() -> None:
    with pytest.raises(CheckFailed, match="the servers table cannot hold a value of the run"):
        frame("servers", [{"source": "run", "server": "a", "tensor_parallel_size": 10**30}])
