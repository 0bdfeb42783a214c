"""verify's records check on a signed bundle: impossible time records fail in one sentence before
the summary or the report is recomputed from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.bundles.finalize import seal_and_pack
from byog.bundles.verify import verify_bundle
from byog.core.paths import RunDir
from tests.support.keys import allowed_signers, make_key
from tests.unit.bundles.checks.test_identity import edit_server, pack, run_dir  # noqa: F401 (run_dir: the fixture)

T0 = 1_764_979_200.0


def test_a_31_year_start_up_fails_verify_in_one_sentence(tmp_path: Path, run_dir: RunDir) -> None:  # noqa: F811
    forged = {
        "starts": [{"started_at": "1995-01-01T00:00:00+00:00", "ready_after_s": 30.0}],
        "activity": [{"kind": "measure", "t0_unix_s": T0, "t1_unix_s": T0 + 60}],
    }
    bundle, allowed = pack(tmp_path, run_dir, forged=forged)
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert report.failures[0].startswith("records: the servers' records spread over 11297 days, more than any run")
    assert any(f.startswith("summary: the servers' records spread over") for f in report.failures)


def _fingerprint(wake: int, tokens: list[list[int]], verdict: str) -> dict[str, object]:
    return {
        "wake": wake,
        "batch": 1,
        "max_tokens": 2,
        "cache_reset": True,
        "tokens": tokens,
        "logprobs": [[-0.5, -0.25]] * len(tokens),
        "verdict": verdict,
        "seq": None if wake == 0 else 0,
        "point_id": None if wake == 0 else "p",
    }


def test_an_edited_wake_fingerprint_fails_verify(tmp_path: Path, run_dir: RunDir) -> None:  # noqa: F811
    # after wake 1 the server generated other tokens; the verdict was edited to "match"
    mode = {
        "partner": "baseline",
        "side": "B",
        "level": 1,
        "fingerprints": [
            _fingerprint(0, [[1, 2], [3, 4]], "reference"),
            _fingerprint(0, [[1, 2], [3, 4]], "reference"),
            _fingerprint(1, [[1, 2], [0, 0]], "match"),
        ],
    }
    bundle, allowed = pack(tmp_path, run_dir, forged={"sleep_mode": mode})
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert report.failures[0].startswith(
        "records: server 'candidate' (launch 1): fingerprint 2 (wake 1) records 'match' but its tokens give 'changed'"
    ), report.failures


def test_a_swap_at_visit_999_that_slept_minus_5_s_fails_verify(tmp_path: Path, run_dir: RunDir) -> None:  # noqa: F811
    swap = {"seq": 999, "point_id": "p", "from_server": "baseline", "sleep_s": -5, "wake_s": 0.1, "at_unix_s": T0}
    mode = {"partner": "baseline", "side": "B", "level": 1, "swaps": [swap]}
    bundle, allowed = pack(tmp_path, run_dir, forged={"sleep_mode": mode})
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    assert report.failures[0].startswith(
        "records: 2 time records are impossible: (1) server 'candidate' (launch 1): a swap slept -5"
    ), report.failures
    assert "a swap before visit 999 of p is outside it" in str(report.results), report.failures


def test_a_phase_record_edited_after_the_run_fails_verify(tmp_path: Path, run_dir: RunDir) -> None:  # noqa: F811
    """The phases a run recorded are signed with it: a signed record whose phases cannot be a run's
    (a measure that ends before it starts, a warm-up moved out of its measure) fails, each named."""
    from tests.unit.analysis.test_phases import sequential_run

    sequential_run(run_dir, "baseline", "candidate")
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    bundle, allowed = pack(tmp_path / "good", run_dir)
    good = verify_bundle(bundle, allowed_signers=allowed)
    assert good.verified, good.failures
    assert next(r for r in good.results if r.name == "records").message.endswith("; 9 phases in order")
    data = json.loads(run_dir.phases_json.read_text())
    data["phases"][3].update(t1_mono_s=data["phases"][3]["t0_mono_s"] - 5, t1_unix_s=data["phases"][3]["t0_unix_s"] - 5)
    data["phases"][1].update(server="candidate")  # a warm-up of the baseline's, moved to the candidate
    run_dir.phases_json.write_text(json.dumps(data))  # after byog's summary and report: a contributor's own edit
    key, public = make_key(tmp_path / "bad", "alice")
    allowed = allowed_signers(tmp_path / "bad" / "allowed", [("alice@example.com", public)])
    bundle = seal_and_pack(run_dir, tmp_path / "bad" / "b.tar.gz", key=key).bundle
    report = verify_bundle(bundle, allowed_signers=allowed)
    assert not report.verified
    records = next(r for r in report.results if r.name == "records")
    assert records.details is not None
    failed = records.details["failed"]
    assert any("phase 4 (measure of baseline) ends 5.0 s before it starts" in f for f in failed)
    assert any("phase 2 (warm-up of candidate) lies outside every measure phase of its server" in f for f in failed)


def _evals_at_once(rd: RunDir, gpus: tuple[str, str], recorded: bool) -> None:
    """The run's plan declares each server's GPUs; its phases hold both servers' evals overlapping,
    with or without the record that the run chose to run them at once."""
    from byog.analysis.gpu_sets import at_once
    from byog.pipeline.activity import add_eval_order, add_phase
    from byog.plans.load import parse_plan
    from tests.unit.analysis.test_phases import at

    text = rd.plan_yaml.read_text()
    for name, ids in zip(("candidate", "baseline"), gpus, strict=True):
        declared = f"    env: {{CUDA_VISIBLE_DEVICES: '{ids}'}}\n"
        text = text.replace(f"  {name}:\n    runtime: local\n", f"  {name}:\n    runtime: local\n{declared}")
    rd.plan_yaml.write_text(text)
    if recorded:
        add_eval_order(rd, [at_once(parse_plan(text, "plan.yaml"), "candidate", "baseline", None)])
    add_phase(rd, "start", "baseline", at(0), at(40))
    add_phase(rd, "start", "candidate", at(41), at(80))
    add_phase(rd, "eval", "candidate", at(81), at(120))
    add_phase(rd, "eval", "baseline", at(80), at(150))


@pytest.mark.parametrize(
    ("gpus", "edit", "failure"),
    [
        (("1", "0"), None, None),
        (("1", "0"), "drop", "phase 3 (eval of candidate) starts 69.0 s before phase 4 (eval of baseline) ends"),
        (
            ("1", "0"),
            "one-card",
            "eval_order says candidate and baseline were evaluated at once, but 'candidate' and 'baseline' both saw "
            "GPU GPU-5e1f at their start (server.json hardware)",
        ),
        (
            ("0", "0"),
            "forge",
            "eval_order says candidate and baseline were evaluated at once, but 'candidate' and 'baseline' share GPU 0",
        ),
    ],
    ids=["honest", "record-dropped", "nvml-saw-one-card", "forged-record-on-one-card"],
)
def test_evals_at_once_verify_only_where_the_run_recorded_them_on_gpus_of_their_own(
    tmp_path: Path,
    run_dir: RunDir,  # noqa: F811
    gpus: tuple[str, str],
    edit: str | None,
    failure: str | None,
) -> None:
    """Overlapping eval phases of two servers verify only beside the run's record that it ran them at
    once, and only where the plan puts the two on GPUs of their own; edits are signed, as a
    contributor's own tools would sign them."""
    from byog.schemas.phases import EvalOrder

    _evals_at_once(run_dir, gpus, recorded=edit != "forge")
    if edit == "forge":  # written before the summary, which then holds it too
        data = json.loads(run_dir.phases_json.read_text())
        data["eval_order"] = [EvalOrder(servers=["candidate", "baseline"], together=True, why="x").model_dump()]
        run_dir.phases_json.write_text(json.dumps(data))
    if edit == "one-card":  # the plan's sets are disjoint, but NVML saw one card behind both at their starts
        for name in ("candidate", "baseline"):
            edit_server(run_dir, name, hardware={"gpus": [{"index": 0, "uuid": "GPU-5e1f"}]})
    (tmp_path / "first").mkdir()
    bundle, allowed = pack(tmp_path / "first", run_dir)  # byog's summary and report
    if edit == "drop":  # after the summary: the record alone loses the choice
        data = json.loads(run_dir.phases_json.read_text())
        data["eval_order"] = []
        run_dir.phases_json.write_text(json.dumps(data))
        key, public = make_key(tmp_path, "alice")
        allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", public)])
        bundle = seal_and_pack(run_dir, tmp_path / "b.tar.gz", key=key).bundle
    report = verify_bundle(bundle, allowed_signers=allowed)
    records = next(r for r in report.results if r.name == "records")
    assert records.details is not None
    if failure is None:
        assert records.details["failed"] == [] and report.verified, report.failures
    else:
        assert any(failure in f for f in records.details["failed"]), records.details["failed"]
        assert not report.verified
