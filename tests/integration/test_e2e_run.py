"""README command 1 for real: `byog run` on the built-in smoke plan, then a resume that launches nothing.

The slowest test in the suite (two real vLLM start-ups, one of them compiled): it is the proof that
the whole pipeline holds together on a fresh machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from byog.runtimes.local import group_alive

pytestmark = pytest.mark.integration


def byog(*args: str, cwd: Path, key: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    if key is not None:
        env["BYOG_SIGNING_KEY"] = str(key)
    return subprocess.run(
        [sys.executable, "-m", "byog", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800
    )


@pytest.fixture(scope="module")
def signing_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real OpenSSH key made for this test, and an allowed_signers file that trusts it."""
    folder = tmp_path_factory.mktemp("keys")
    key = folder / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "contributor", "-f", str(key)], check=True)
    allowed = folder / "allowed_signers"
    allowed.write_text(f'contributor@example.com namespaces="byog-bundle@v1" {(folder / "id_ed25519.pub").read_text()}')
    return key, allowed


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory, signing_key) -> tuple[Path, subprocess.CompletedProcess[str]]:
    work = tmp_path_factory.mktemp("e2e")
    return work / "run", byog("run", "--run-dir", str(work / "run"), cwd=work, key=signing_key[0])


def test_smoke_run_writes_the_run_directory(smoke_run) -> None:
    run_dir, result = smoke_run
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "wall time" in result.stdout
    assert "signed with key SHA256:" in result.stdout
    for server in ("candidate", "baseline"):
        for batch in (1, 2, 4):
            rows = pq.read_table(run_dir / "bench" / server / f"decode-b{batch}-isl32-osl64.parquet").to_pandas()
            assert len(rows) == batch * 4  # 1 warm-up + 3 measured waves of B requests
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


def test_rerun_resumes_without_launching_and_derives_the_same_summary(smoke_run, signing_key) -> None:
    run_dir, first = smoke_run
    assert first.returncode == 0
    before = (run_dir / "summary.json").read_bytes()
    again = byog("run", "--run-dir", str(run_dir), cwd=run_dir.parent, key=signing_key[0])
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert again.stdout.count("already complete; not launched") == 2
    assert (run_dir / "summary.json").read_bytes() == before


def test_the_run_ends_with_a_signed_bundle_that_verifies(smoke_run, signing_key) -> None:
    run_dir, result = smoke_run
    assert result.returncode == 0
    bundle = run_dir / "bundle.tar.gz"
    assert bundle.is_file()
    checked = byog("verify", str(bundle), "--allowed-signers", str(signing_key[1]), cwd=run_dir.parent)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "contributor@example.com" in checked.stdout
    other = run_dir.parent / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    stranger = run_dir.parent / "stranger_signers"
    stranger.write_text(f"someone@example.com {(run_dir.parent / 'other_key.pub').read_text()}")
    rejected = byog("verify", str(bundle), "--allowed-signers", str(stranger), cwd=run_dir.parent)
    assert rejected.returncode == 1, rejected.stdout + rejected.stderr
    assert "wrong signer" in rejected.stdout
