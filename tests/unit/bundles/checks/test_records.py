"""verify's records check on a signed bundle: impossible time records fail in one sentence before
the summary or the report is recomputed from them."""

from __future__ import annotations

import json
from pathlib import Path

from byog.bundles.finalize import seal_and_pack
from byog.bundles.verify import verify_bundle
from byog.core.paths import RunDir
from tests.support.keys import allowed_signers, make_key
from tests.unit.bundles.checks.test_identity import pack, run_dir  # noqa: F401 (run_dir: the fixture)

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
    first = report.failures[0]
    assert first.startswith("records: ") and "server 'candidate' (launch 1): a swap slept -5" in first, report.failures
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
