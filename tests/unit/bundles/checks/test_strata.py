"""verify's strata check: per-stratum verdicts recompute from the per-item records; edits are refused."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from byog.analysis.strata import operating_point
from byog.analysis.summary import derive_summary
from byog.bundles.verify import verify_bundle
from byog.core.paths import RunDir
from byog.schemas.evals import write_eval_items
from tests.support.bundles_kit import pack_with_summary, result
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

SPEC = SyntheticSpec(batch_sizes=(1,), eval_items=400)
POINTS = [1, 64]


def _items(server: str, moved: int = 0) -> list[dict[str, Any]]:
    """Half the items right on both servers; the candidate wrong on 60 of them in stratum 64 only.
    ``moved``: that many stratum-64 rows recorded as run at 1."""
    rows = []
    flipped = 0
    for n in range(SPEC.eval_items):
        item_id, sha = f"test:{n}", hashlib.sha256(f"item {n}".encode()).hexdigest()
        point = operating_point(item_id, sha, POINTS)
        score = float(n % 2)
        if server == "candidate" and score == 1.0 and point == 64 and flipped < 60:
            score, flipped = 0.0, flipped + 1
        if point == 64 and moved:
            point, moved = 1, moved - 1
        row = {"item_id": item_id, "item_sha256": sha, "pass_index": 0, "seed": SPEC.seed, "score": score}
        rows.append(row | {"extracted_answer": "1", "target": "1", "num_concurrent": point})
    return rows


def stratified_run(tmp_path: Path, moved: int = 0) -> RunDir:
    text = plan_yaml(SPEC).replace("    margin: 3.0\n", "    margin: 5.0\n    operating_points: [64, 1]\n")
    run_dir = make_run_dir(tmp_path / "run", SPEC, plan_text=text)
    for server in ("candidate", "baseline"):
        write_eval_items(run_dir.eval_items(server, "gsm8k"), _items(server, moved if server == "candidate" else 0))
    return run_dir


def pack(tmp_path: Path, run_dir: RunDir, edit: dict[str, Any] | None = None) -> tuple[Path, Path]:
    def forge(document: dict[str, Any]) -> None:
        document["evals"]["verdicts"][0]["strata"].update(edit or {})

    return pack_with_summary(tmp_path, run_dir, forge if edit else None)


def test_a_difference_at_64_only_verifies_and_the_report_says_accuracy_depends_on_the_batch(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path)
    strata = derive_summary(rd).evals.verdicts[0].strata
    assert strata is not None
    assert [(s.operating_point, s.verdict) for s in strata.strata] == [(1, "equivalent"), (64, "different")]
    assert strata.depends == "yes"
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert report.verified, report.failures
    assert result(report, "strata").message.startswith("1 stratified verdict(s) recompute")
    note = next(line for line in rd.report_md.read_text().splitlines() if "per operating point" in line)
    assert note.startswith("- gsm8k, candidate vs baseline: per operating point (requests in flight, which bound ")
    assert "64 vs 1: Δd -30.46, 95% CI [" in note
    assert "1: equivalent, d 0.00" in note and "64: different" in note
    assert note.endswith("accuracy depends on the batch: yes.")


def test_an_edited_stratum_verdict_is_refused(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path)
    strata = derive_summary(rd).evals.verdicts[0].strata
    assert strata is not None
    forged = [s.model_dump() | {"verdict": "equivalent"} for s in strata.strata]
    bundle, allowed = pack(tmp_path, rd, {"strata": forged, "depends": "no"})
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert result(report, "strata").message == (
        "gsm8k candidate vs baseline: the bundle states 1: equivalent, 64: equivalent; depends: no; "
        "its per-item records and plan give 1: equivalent, 64: different; depends: yes"
    )


def test_items_recorded_outside_their_stratum_are_refused(tmp_path: Path) -> None:
    rd = stratified_run(tmp_path, moved=5)
    bundle, allowed = pack(tmp_path, rd)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert result(report, "strata").message.startswith(
        "gsm8k on candidate: 5 of 400 rows ran outside their operating point's stratum (e.g. item test:"
    )
