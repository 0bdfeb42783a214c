"""verify's records check on a signed bundle: impossible time records fail in one sentence before
the summary or the report is recomputed from them."""

from __future__ import annotations

from pathlib import Path

from byog.bundles.verify import verify_bundle
from byog.core.paths import RunDir
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
    assert report.failures[0].startswith("records: server 'candidate' (launch 1): a swap slept -5"), report.failures
    assert "a swap before visit 999 of p is outside it" in str(report.results), report.failures
