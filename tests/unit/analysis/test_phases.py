"""The run's phase record (phases.json): what the one writer appends, where the time went, and the
order and sanity verify requires of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.analysis.phases import phase_problems, phase_time, read_phases, shares_line
from byog.core.errors import CheckFailed
from byog.core.paths import RunDir
from byog.pipeline.activity import add_phase, add_warmups, phase, spent
from byog.schemas.phases import PhaseLog

M0, U0 = 5_000.0, 1_764_979_200.0  # a monotonic reading and the Unix time read with it


def at(s: float) -> tuple[float, float]:
    return M0 + s, U0 + s


def sequential_run(rd: RunDir, stock: str = "stock", cand: str = "cand") -> None:
    """A sequential pair as byog records it: start, measure (two warm-ups inside), eval; then the other."""
    add_phase(rd, "start", stock, at(0), at(40))
    add_warmups(rd, stock, [(at(41), at(43)), (at(50), at(52))])
    add_phase(rd, "measure", stock, at(40), at(60))
    add_phase(rd, "eval", stock, at(60), at(80))
    add_phase(rd, "start", cand, at(82), at(120))
    add_warmups(rd, cand, [(at(121), at(124))])
    add_phase(rd, "measure", cand, at(120), at(140))
    add_phase(rd, "eval", cand, at(140), at(160))


def test_the_wall_by_phase_and_its_measuring_share(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    sequential_run(rd)
    spent_ = phase_time(rd)
    assert spent_ is not None
    assert (spent_.wall_s, spent_.start_s, spent_.warmup_s, spent_.eval_s, spent_.swap_s) == (160, 78, 7, 40, 0)
    assert spent_.measuring_s == 40 - 7  # the warm-up waves are not measuring
    assert spent_.other_s == pytest.approx(2)  # the stop between the servers
    assert spent_.measuring_share == pytest.approx(33 / 160)
    assert shares_line(spent_) == ("measuring 20.6% of 160.0 s; start 48.8%, eval 25.0%, warm-up 4.4%, other 1.2%")


def test_a_run_without_bench_leads_with_what_it_did(tmp_path: Path) -> None:
    """An evals-only run as byog records one (a measure phase of a bench with no points, milliseconds
    long): "measuring 0.0%" would read as a run that wasted its time."""
    rd = RunDir(tmp_path)
    add_phase(rd, "start", "stock", at(0), at(40))
    add_phase(rd, "measure", "stock", at(40), at(40.002))
    add_phase(rd, "eval", "stock", at(40.002), at(100))
    spent_ = phase_time(rd)
    assert spent_ is not None and 0 < spent_.measuring_s < 0.01
    assert shares_line(spent_, bench=False) == "no bench; of 100.0 s: eval 60.0%, start 40.0%"
    assert shares_line(spent_) == "measuring 0.0% of 100.0 s; eval 60.0%, start 40.0%"


def test_the_writer_records_both_clocks_in_the_order_phases_end(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    (tmp_path / "servers" / "stock").mkdir(parents=True)
    (tmp_path / "servers" / "stock" / "server.json").write_text(json.dumps({"name": "stock"}))
    with phase(rd, "start", "stock"):
        pass
    with spent(rd, "stock", "measure"):
        pass
    log = read_phases(rd)
    assert log is not None and [p.kind for p in log.phases] == ["start", "measure"]
    assert phase_problems(log) == []
    assert all(p.t1_mono_s >= p.t0_mono_s and p.t1_unix_s >= p.t0_unix_s for p in log.phases)
    # the measure phase is also the server's activity span, of the same Unix times
    span = json.loads((tmp_path / "servers" / "stock" / "server.json").read_text())["activity"][0]
    assert (span["kind"], span["t0_unix_s"]) == ("measure", log.phases[1].t0_unix_s)
    with pytest.raises(RuntimeError), phase(rd, "start", "cand"):
        raise RuntimeError("an interrupted start took its time too")
    log = read_phases(rd)
    assert log is not None and log.phases[-1].server == "cand"


def _edited(tmp_path: Path, edit: dict[str, float | str], index: int) -> list[str]:
    rd = RunDir(tmp_path)
    sequential_run(rd)
    data = json.loads(rd.phases_json.read_text())
    data["phases"][index].update(edit)
    return phase_problems(PhaseLog.model_validate(data))


@pytest.mark.parametrize(
    ("index", "edit", "said"),
    [
        (3, {"t1_mono_s": M0 + 30, "t1_unix_s": U0 + 30}, "phase 4 (measure of stock) ends 10.0 s before it starts"),
        (3, {"t1_mono_s": M0 + 6000}, "lasts 5960.0 s by the monotonic clock but 20.0 s by Unix time"),
        (1, {"t0_unix_s": U0 + 10, "t0_mono_s": M0 + 10}, "phase 2 (warm-up of stock) lies outside every measure"),
        (4, {"t1_unix_s": U0 + 20, "t0_unix_s": U0, "t1_mono_s": M0 + 20, "t0_mono_s": M0}, "out of order"),
        (6, {"server": "stock"}, "phase 7 (warm-up of stock) lies outside every measure phase of its server"),
    ],
)
def test_verify_refuses_an_edited_record_in_one_sentence(
    tmp_path: Path, index: int, edit: dict[str, float | str], said: str
) -> None:
    problems = _edited(tmp_path, edit, index)
    assert problems and any(said in p for p in problems), problems


def test_two_phases_that_overlap_are_refused(tmp_path: Path) -> None:
    problems = _edited(tmp_path, {"t0_unix_s": U0 + 70, "t0_mono_s": M0 + 70}, 5)  # cand's start inside stock's eval
    assert any("starts 10.0 s before phase 5 (eval of stock) ends" in p for p in problems), problems
    rd = RunDir(tmp_path)
    rd.phases_json.write_text(json.dumps({**json.loads(rd.phases_json.read_text()), "phases": [{"kind": "nap"}]}))
    with pytest.raises(CheckFailed, match="phases.json is not a phase record"):
        phase_time(rd)


def test_a_run_without_a_record_has_no_phases(tmp_path: Path) -> None:
    assert phase_time(RunDir(tmp_path)) is None


def test_the_wake_checks_are_a_phase_of_their_own_in_the_shares(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    add_phase(rd, "start", "stock", at(0), at(40))
    add_phase(rd, "wake-check", "stock", at(40), at(50))
    add_phase(rd, "measure", "stock", at(50), at(60))
    add_phase(rd, "swap", "cand", at(60), at(61))
    add_phase(rd, "wake-check", "cand", at(61), at(71))
    add_phase(rd, "measure", "cand", at(71), at(80))
    spent_ = phase_time(rd)
    assert spent_ is not None and (spent_.check_s, spent_.other_s) == (20, 0)
    assert shares_line(spent_) == "measuring 23.8% of 80.0 s; start 50.0%, wake check 25.0%, swap 1.2%"


def test_two_servers_evals_overlap_only_where_the_run_recorded_them_at_once(tmp_path: Path) -> None:
    from byog.analysis.gpu_sets import Choice
    from byog.pipeline.activity import add_eval_order

    rd = RunDir(tmp_path)
    add_phase(rd, "eval", "stock", at(0), at(50))
    add_phase(rd, "eval", "cand", at(10), at(60))
    log = read_phases(rd)
    assert log is not None
    assert phase_problems(log) == ["phase 2 (eval of cand) starts 40.0 s before phase 1 (eval of stock) ends"]
    add_eval_order(rd, [Choice(("cand", "stock"), True, "each on GPUs of its own")])
    add_eval_order(rd, [Choice(("cand", "stock"), True, "each on GPUs of its own")])  # a resume: recorded once
    log = read_phases(rd)
    assert log is not None and len(log.eval_order) == 1 and phase_problems(log) == []
    spent_ = phase_time(rd)
    assert spent_ is not None and spent_.eval_s == 60  # the union: the overlap counts once
    add_phase(rd, "start", "other", at(55), at(70))  # only the two servers' evals may overlap
    log = read_phases(rd)
    assert log is not None
    assert phase_problems(log) == ["phase 3 (start of other) starts 5.0 s before phase 2 (eval of cand) ends"]


def test_a_layout_1_record_reads_as_one_server_at_a_time(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    add_phase(rd, "eval", "stock", at(0), at(50))
    data = json.loads(rd.phases_json.read_text())
    del data["eval_order"]
    rd.phases_json.write_text(json.dumps({**data, "schema_version": 1}))
    add_phase(rd, "eval", "cand", at(51), at(60))  # the run resumed by this byog keeps the earlier phases
    log = read_phases(rd)
    assert log is not None and [p.server for p in log.phases] == ["stock", "cand"] and log.eval_order == []
    assert log.schema_version == 2
