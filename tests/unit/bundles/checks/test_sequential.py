"""verify's sequential check: the decision recomputes from the per-item records; an edited one is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from byog.analysis.summary import derive_summary
from byog.bundles.verify import verify_bundle
from byog.core.errors import ByogError
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from tests.support.bundles_kit import pack_with_summary, result
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

SPEC = SyntheticSpec(batch_sizes=(1,), eval_items=40)


def sequential_run(tmp_path: Path, looks: str | None) -> RunDir:
    text = plan_yaml(SPEC)
    if looks is not None:
        text = text.replace("    margin: 3.0\n", f"    margin: 3.0\n    looks: {looks}\n    spending: pocock\n")
    return make_run_dir(tmp_path / "run", SPEC, plan_text=text)


def pack(tmp_path: Path, run_dir: RunDir, edit: dict[str, Any] | None = None) -> tuple[Path, Path]:
    def forge(document: dict[str, Any]) -> None:
        verdict = document["evals"]["verdicts"][0]
        verdict["sequential"] = {**verdict["sequential"], **(edit or {})}
        verdict["verdict"] = (edit or {}).get("decision", verdict["verdict"])

    return pack_with_summary(tmp_path, run_dir, forge if edit else None)


def _refusal(tmp_path: Path, run_dir: RunDir) -> Any:
    """The sequential check's result on the packed run, which verify refuses."""
    bundle, allowed = pack(tmp_path, run_dir)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    return result(report, "sequential")


def test_planned_looks_recompute_and_are_recorded(tmp_path: Path) -> None:
    rd = sequential_run(tmp_path, "[0.5, 0.75, 1.0]")
    verdict = derive_summary(rd).evals.verdicts[0]
    assert verdict.sequential is not None
    assert [look.items for look in verdict.sequential.looks][:1] == [20]
    assert verdict.sequential.items_planned == 40
    assert verdict.verdict in (verdict.sequential.decision, "degenerate")
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert report.verified, report.failures
    assert result(report, "sequential").message.startswith("1 group-sequential decision(s) recompute")
    note = next(line for line in rd.report_md.read_text().splitlines() if "group-sequential" in line)
    assert note.startswith(
        f"- gsm8k, candidate vs baseline: group-sequential (pocock spending, Tango score statistic, "
        "looks at 0.50, 0.75, 1.00): "
        f"{verdict.sequential.decision} at {verdict.sequential.items_used} of 40 items; 20 items: "
    )


def test_an_edited_decision_is_refused(tmp_path: Path) -> None:
    rd = sequential_run(tmp_path, "[0.5, 1.0]")
    verdict = derive_summary(rd).evals.verdicts[0]
    assert verdict.sequential is not None
    forged = "different" if verdict.sequential.decision == "equivalent" else "equivalent"
    first = verdict.sequential.looks[0].model_dump()
    bundle, allowed = pack(
        tmp_path, rd, {"decision": forged, "items_used": 20, "looks": [{**first, "decision": forged}]}
    )
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    message = result(report, "sequential").message
    assert message.startswith(f"gsm8k candidate vs baseline: the bundle states {forged} at 20 of 40 items")
    assert f"its per-item records and plan give {verdict.sequential.decision}" in message


def test_no_looks_planned_is_skipped(tmp_path: Path) -> None:
    rd = sequential_run(tmp_path, None)
    assert derive_summary(rd).evals.verdicts[0].sequential is None
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert report.verified, report.failures
    assert result(report, "sequential").status == "skip"


def test_a_plan_with_unordered_looks_is_refused() -> None:
    text = plan_yaml(SPEC).replace("    margin: 3.0\n", "    margin: 3.0\n    looks: [0.75, 0.5, 1.0]\n")
    with pytest.raises(ByogError, match="looks must increase"):
        parse_plan(text, "plan")


def _keep_items(run_dir: RunDir, server: str, n: int) -> None:
    """Keep the first ``n`` items of the server's gsm8k records (test:0 .. test:n-1)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = run_dir.eval_items(server, "gsm8k")
    table = pq.read_table(path)
    keep = pc.is_in(table.column("item_id"), value_set=pa.array([f"test:{i}" for i in range(n)]))
    pq.write_table(table.filter(keep), path)


def test_items_dropped_past_a_look_that_said_continue_are_refused(tmp_path: Path) -> None:
    rd = sequential_run(tmp_path, "[0.5, 1.0]")
    _keep_items(rd, "candidate", 25)
    verdict = derive_summary(rd).evals.verdicts[0]
    assert verdict.sequential is not None
    assert [(look.items, look.decision) for look in verdict.sequential.looks] == [(20, "continue")]
    assert _refusal(tmp_path, rd).message == (
        "gsm8k candidate vs baseline: the per-item records pair fewer than the 40 items of look 2 of the plan, "
        "and look 1 at 20 items said continue: items were dropped without the group-sequential gate stopping"
    )


# --- each server's stated stop: the later server of a pair, or both of a pair evaluated at once ------


def _stopped_at(run_dir: RunDir, server: str, look: int, items: int, partner: str | None = None) -> None:
    """The server's results.json says it stopped at ``look`` after ``items`` of 40, as the runner writes it."""
    path = run_dir.eval_results(server, "gsm8k")
    results = json.loads(path.read_text())
    record = {"planned_items": 40, "looks_run": look, "items_run": items, "stopped": True}
    results["extra"] = {"sequential": {**record, **({"lockstep_with": partner} if partner else {})}}
    atomic_write_json(path, results)


def _at_once_run(tmp_path: Path, margin: str) -> RunDir:
    """Both servers evaluated at once in the same looks, stopped at look 1 (20 of 40 items)."""
    text = plan_yaml(SPEC).replace("    margin: 3.0\n", f"    margin: {margin}\n    looks: [0.5, 1.0]\n")
    rd = make_run_dir(tmp_path / "run", SPEC, plan_text=text)
    for server, partner in (("candidate", "baseline"), ("baseline", "candidate")):
        _keep_items(rd, server, 20)
        _stopped_at(rd, server, 1, 20, partner)
    return rd


def test_both_servers_of_a_pair_at_once_stopped_at_the_look_where_the_gate_stops_verify(tmp_path: Path) -> None:
    rd = _at_once_run(tmp_path, "40.0")  # 20 alike items prove equivalence at a 40-point margin
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert report.verified, report.failures
    assert result(report, "sequential").message == (
        "1 group-sequential decision(s) recompute from the per-item records at the planned looks; "
        "2 server(s) stopped at the look where the gate on their records stops"
    )


def test_servers_stopped_at_a_look_where_the_gate_on_their_records_does_not_stop_are_refused(tmp_path: Path) -> None:
    rd = _at_once_run(tmp_path, "20.0")  # at 20 points, look 1 says continue
    failed = _refusal(tmp_path, rd).details["failed"]
    assert failed[0].startswith("gsm8k candidate vs baseline: the per-item records pair fewer than the 40 items")
    assert failed[1:] == [
        f"gsm8k on {server}: its results say it stopped at look 1, but the gate on the records of its 1 pair(s) "
        "does not stop"
        for server in ("baseline", "candidate")
    ]


def test_a_pair_at_once_that_stopped_at_different_looks_is_refused(tmp_path: Path) -> None:
    """The baseline kept running to look 2 and says it stopped there: the gate on the pair's records
    stopped at look 1, where the candidate stopped, so the baseline would have stopped there too."""
    rd = _at_once_run(tmp_path, "40.0")
    fresh = make_run_dir(tmp_path / "fresh", SPEC, plan_text=rd.plan_yaml.read_text())
    rd.eval_items("baseline", "gsm8k").write_bytes(fresh.eval_items("baseline", "gsm8k").read_bytes())
    _stopped_at(rd, "baseline", 2, 40, "candidate")
    assert _refusal(tmp_path, rd).message == (
        "gsm8k on baseline: its results say it stopped at look 2, but the gate on the records of its 1 pair(s) "
        "stops at look 1"
    )
    _stopped_at(rd, "baseline", 1, 20, "candidate")  # says look 1, holds look 2's items
    (tmp_path / "again").mkdir()
    assert _refusal(tmp_path / "again", rd).message == (
        "gsm8k on baseline: its results say it stopped at look 1, but it holds 40 items, not that look's"
    )
