"""The performance section names a re-measured point: how often, and whether it ended valid."""

from __future__ import annotations

import json
from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.report.markdown import render_report
from tests.support.synthetic import SyntheticSpec, make_run_dir, saturate_client

ATTEMPT = {
    "started_at": "2026-12-06T00:00:00+00:00",
    "invalid_reasons": ["client saturated: it used 97% of a core (limit 90%)"],
    "waited_s": 2.5,
    "cleared": True,
}


def _remeasured(path: Path, attempts: int) -> None:
    record = json.loads(path.read_text())
    record["schema_version"] = 4
    record["point"]["ci_target"], record["point"]["max_waves"] = None, 0
    record["attempts"] = [{"attempt": n, **ATTEMPT} for n in range(1, attempts + 1)]
    path.write_text(json.dumps(record))


def test_a_remeasured_point_is_named_valid_on_its_last_attempt_or_still_invalid(tmp_path: Path) -> None:
    rd = make_run_dir(tmp_path / "run", SyntheticSpec(batch_sizes=(1, 2), eval_items=4))
    _remeasured(rd.bench_point("baseline", "decode-b1-isl32-osl64"), 2)
    saturate_client(rd, "candidate", "decode-b2-isl32-osl64")  # its last attempt was saturated too
    _remeasured(rd.bench_point("candidate", "decode-b2-isl32-osl64"), 2)
    report = render_report(rd, derive_summary(rd))
    assert "- baseline decode-b1-isl32-osl64: re-measured 2×, valid on the 2nd" in report
    assert "(re-measured 2×, still invalid)" in report
    assert report.count("re-measured") == 2  # points measured once say nothing
