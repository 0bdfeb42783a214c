"""README command 1 for real: `byog run` on the built-in smoke plan, then a resume that launches nothing.

The slowest run in the suite (two real vLLM start-ups, one of them compiled): it is the proof that
the whole pipeline holds together on a fresh machine. The run is the session's one smoke run
(tests/integration/conftest.py: submitted through the Slurm test cluster where it runs, where
test_slurm_submit_cpu reads the job; a local `byog run` elsewhere).
"""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from byog.plans.load import load_plan
from byog.runtimes.local import group_alive
from tests.support.cli import byog, byog_env
from tests.support.contributing import checked_commands, measured, run_guide_command
from tests.support.keys import ContributorKey, ssh_keygen
from tests.support.smoke import SMOKE_TEST_TIMEOUT_S, SmokeRun

pytestmark = [pytest.mark.integration, pytest.mark.slurm, pytest.mark.timeout(SMOKE_TEST_TIMEOUT_S)]


def test_smoke_run_writes_the_run_directory(smoke_run: SmokeRun) -> None:
    run_dir = smoke_run.run_dir
    assert smoke_run.returncode == 0, smoke_run.submitted[-2000:] + smoke_run.output[-6000:]
    assert "wall time" in smoke_run.output
    assert "signed with key SHA256:" in smoke_run.output
    for server in ("candidate", "baseline"):
        for batch in (1, 2, 4):
            rows = pq.read_table(run_dir / "bench" / server / f"decode-b{batch}-isl32-osl64.parquet").to_pandas()
            point = json.loads((run_dir / "bench" / server / f"decode-b{batch}-isl32-osl64.json").read_text())
            stopping = point["stopping"]  # 3 to 6 measured waves: stopped at the 1% CI target or the cap
            assert 3 <= stopping["waves"] <= 6 and len(stopping["half_widths"]) == stopping["waves"]
            assert len(rows) == batch * (1 + stopping["waves"])  # 1 warm-up wave, then the measured ones
        items = pq.read_table(run_dir / "evals" / server / "gsm8k" / "items.parquet").to_pandas()
        assert len(items) == 10  # the smoke profile's GSM8K: the smoke tier's 10 items
        record = json.loads((run_dir / "servers" / server / "server.json").read_text())
        assert all(not group_alive(start["pid"]) for start in record["starts"])  # nothing left running
    assert "--enforce-eager" in json.loads((run_dir / "servers" / "baseline" / "server.json").read_text())["argv"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert {c["point_id"] for c in summary["bench"]["comparisons"]} == {f"decode-b{b}-isl32-osl64" for b in (1, 2, 4)}
    assert [v["task"] for v in summary["evals"]["verdicts"]] == ["arithmetic_generated", "gsm8k"]
    scores = {(s["server"], s["task"]): s for s in summary["evals"]["scores"]}
    for server in ("candidate", "baseline"):
        score = scores[(server, "arithmetic_generated")]
        assert score["n_items"] == 200 and 0 < score["score"] < 100, score  # neither floor nor ceiling
        assert score["data"].startswith("generated") and "not a published benchmark" in score["data"]
    verdict = next(v for v in summary["evals"]["verdicts"] if v["task"] == "arithmetic_generated")
    print(
        f"\narithmetic_generated compiled {scores[('candidate', 'arithmetic_generated')]['score']:.1f} vs eager "
        f"{scores[('baseline', 'arithmetic_generated')]['score']:.1f}: d {verdict['d']}, SE {verdict['se_d']}, "
        f"90% CI [{verdict['ci90_low']}, {verdict['ci90_high']}], margin {verdict['margin']}: {verdict['verdict']}; "
        f"discordant {verdict['discordant']}/{verdict['n']}, observed re-draw {verdict['observed_redraw']}, "
        f"false-fail {verdict['observed_false_fail']}, power {verdict['observed_power']}, "
        f"screening {verdict['screening']} {verdict['screening_label']}"
    )
    assert verdict["degenerate"] == [] and verdict["verdict"] == "equivalent" and not verdict["screening"], verdict
    report = (run_dir / "report.md").read_text()
    # report v3: one matrix per metric and pair, B in the rows (candidate, baseline, speed-up per row)
    assert re.search(r"^\| B \| candidate \| baseline \| speed-up", report, re.M), report[:3000]
    # a number in the B = 4 row, struck through where this box flagged the point invalid (client saturated)
    assert re.search(r"^\| 4 \| (~~)?[0-9]", report, re.M) and "gsm8k" in report
    # the smoke profile declares its pair's difference: the report names it and says the baseline is not stock
    assert "candidate vs baseline: differs on purpose in `--enforce-eager`" in report and "is not stock" in report


def test_rerun_resumes_without_launching_and_derives_the_same_summary(
    smoke_run: SmokeRun, signing_key: ContributorKey
) -> None:
    run_dir = smoke_run.run_dir
    assert smoke_run.returncode == 0
    before = (run_dir / "summary.json").read_bytes()
    again = byog("run", "--run-dir", str(run_dir), cwd=run_dir.parent, env=byog_env(signing_key=signing_key.key))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert again.stdout.count("already complete; not launched") == 2
    assert (run_dir / "summary.json").read_bytes() == before


def test_the_run_ends_with_a_signed_bundle_that_verifies(smoke_run: SmokeRun, signing_key: ContributorKey) -> None:
    run_dir = smoke_run.run_dir
    assert smoke_run.returncode == 0
    bundle = run_dir / "bundle.tar.gz"
    assert bundle.is_file()
    checked = byog(
        "verify", str(bundle), "--allowed-signers", str(signing_key.allowed_signers), cwd=run_dir.parent, env=byog_env()
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "contributor@example.com" in checked.stdout
    other = run_dir.parent / "other_key"
    ssh_keygen(other)
    stranger = run_dir.parent / "stranger_signers"
    stranger.write_text(f"someone@example.com {(run_dir.parent / 'other_key.pub').read_text()}")
    rejected = byog("verify", str(bundle), "--allowed-signers", str(stranger), cwd=run_dir.parent, env=byog_env())
    assert rejected.returncode == 1, rejected.stdout + rejected.stderr
    assert "wrong signer" in rejected.stdout


def test_the_smoke_run_is_the_run_of_the_plan_byog_init_writes(smoke_run: SmokeRun, tmp_path) -> None:
    """docs/contributing.md's CPU walkthrough (`byog init` with its flags, then `byog run --tier smoke`):
    the plan this run recorded is the one `byog init` writes, in everything a run measures, so this one
    run serves the guide too (no second run of servers in CI)."""
    assert smoke_run.returncode == 0
    written = run_guide_command(checked_commands()[0], tmp_path)
    assert written.returncode == 0, written.stdout[-3000:] + written.stderr[-3000:]
    recorded, _ = load_plan(str(smoke_run.run_dir / "plan.yaml"))
    assert measured(load_plan(str(tmp_path / "plan.yaml"))[0]) == measured(recorded)
