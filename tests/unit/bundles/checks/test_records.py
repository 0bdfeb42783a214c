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
