"""The environment section: what each server ran (when recorded) and the pairs the plan declares."""

from __future__ import annotations

import json
from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.plans.load import load_plan
from byog.report.markdown import render_report
from tests.support.synthetic import SyntheticSpec, make_run_dir


def test_the_smoke_profiles_report_says_its_baseline_is_not_stock(tmp_path: Path) -> None:
    _, text = load_plan("smoke")
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(eval_items=5), plan_text=text)
    report = render_report(run_dir, derive_summary(run_dir))
    assert (
        "- candidate vs baseline: differs on purpose in `--enforce-eager`; the baseline baseline is not stock."
        in report
    )


def test_identity_rows_only_for_servers_that_recorded_one(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(batch_sizes=(1,), eval_items=5))
    before = render_report(run_dir, derive_summary(run_dir))
    assert "What each server ran" not in before  # records without an identity render as they always did
    path = run_dir.server_record("candidate")
    identity = {
        "vllm": {
            "distribution": "vllm",
            "version": "0.32.0",
            "commit": "abc1234def",
            "commit_source": "direct_url.json",
        },
        "weights": {"weights_sha256": "a" * 64, "tokenizer_sha256": "b" * 64},
    }
    path.write_text(json.dumps({**json.loads(path.read_text()), "identity": identity}))
    after = render_report(run_dir, derive_summary(run_dir))
    # wider than GitHub's column (format 6): split into tables keyed by the server
    rows = [line for line in after.splitlines() if line.startswith("| candidate | ")]
    assert (
        "| candidate | vllm 0.32.0 commit abc1234def | `abc1234def` (direct\\_url.json) | `sha256:aaaaaaaaaaaaaaaa` |"
        in rows
    )
    assert "| candidate | `sha256:bbbbbbbbbbbbbbbb` |" in rows
