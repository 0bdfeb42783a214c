"""`byog items`: the flipped items of a run directory and of a signed bundle (verified first; one
that does not verify shows nothing), in one sentence when the pair or task is not there."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.analysis.summary import derive_summary
from byog.bundles.finalize import seal_and_pack
from byog.cli import app
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from tests.support.bundles_kit import TINY
from tests.support.cmark import render_gfm
from tests.support.flipped import HOSTILE_ANSWER, arithmetic_rows, write_task
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import make_run_dir

ROWS = arithmetic_rows(20)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, Path, Path]:
    folder = tmp_path_factory.mktemp("items")
    run_dir = make_run_dir(folder / "run", TINY)
    write_task(
        run_dir, "candidate", "arithmetic_generated", ROWS, set(range(0, 12)), answer_of=lambda i: HOSTILE_ANSWER
    )
    write_task(run_dir, "baseline", "arithmetic_generated", ROWS, set(range(2, 14)))
    atomic_write_json(run_dir.summary_json, derive_summary(run_dir).to_json())
    run_dir.plots_dir.mkdir(exist_ok=True)
    key, public = make_key(folder, "signer")
    packed = seal_and_pack(run_dir, folder / "bundle.tar.gz", sign=True, key=key, plots=None)
    return run_dir, packed.bundle, allowed_signers(folder / "allowed_signers", [("signer@test", public)])


def test_a_run_directorys_flipped_items(signed) -> None:
    run_dir, _, _ = signed
    result = CliRunner().invoke(
        app, ["items", str(run_dir.root), "--pair", "candidate", "--task", "arithmetic_generated"]
    )
    assert result.exit_code == 0, result.output
    assert "4 items flipped: 2 ✓→✗, 2 ✗→✓ (of 20 paired" in result.output
    row = next(line for line in result.output.splitlines() if line.startswith(f"| {ROWS[12]['id']} |"))
    assert "\\<img src=x onerror=alert(1)\\>" in row  # markdown off a terminal, inert
    html = render_gfm(result.output)  # what a PR shows when the piped output is pasted into it
    assert ROWS[12]["question"] in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    for live in ("<img", "<a ", "@octocat"):
        assert live not in html


def test_a_verified_bundles_flipped_items_as_json(signed) -> None:
    _, bundle, signers = signed
    result = CliRunner().invoke(
        app, ["items", str(bundle), "--task", "arithmetic_generated", "--allowed-signers", str(signers), "--json"]
    )
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert [(f["candidate"], f["lost"], f["won"], len(f["items"])) for f in found] == [("candidate", 2, 2, 4)]


def test_a_bundle_that_does_not_verify_shows_nothing(signed, tmp_path: Path) -> None:
    _, bundle, _ = signed
    other = tmp_path / "other_signers"
    _, public = make_key(tmp_path, "stranger")
    allowed_signers(other, [("stranger@test", public)])
    result = CliRunner().invoke(app, ["items", str(bundle), "--allowed-signers", str(other)])
    assert result.exit_code == 1 and "does not verify, so its items are not shown" in result.output
    assert ROWS[12]["question"] not in result.output and "Traceback" not in result.output


def test_a_tampered_bundle_shows_nothing(signed, tmp_path: Path) -> None:
    _, bundle, signers = signed
    tampered = tmp_path / "tampered.tar.gz"
    with tarfile.open(bundle) as src, tarfile.open(tampered, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member)
            content = data.read() if data else b""
            if member.name.endswith("arithmetic_generated/results.json"):
                content = content.replace(b'"limit": 20', b'"limit": 21')
            member.size = len(content)
            dst.addfile(member, io_bytes(content))
    result = CliRunner().invoke(app, ["items", str(tampered), "--allowed-signers", str(signers)])
    assert result.exit_code == 1 and "does not verify" in result.output


def io_bytes(content: bytes):
    import io

    return io.BytesIO(content)


def test_an_unknown_pair_or_task_is_one_sentence(signed) -> None:
    run_dir, bundle, signers = signed
    result = CliRunner().invoke(
        app, ["items", str(bundle), "--allowed-signers", str(signers), "--pair", "nobody"], env={"COLUMNS": "400"}
    )
    assert result.exit_code == 2, result.output
    assert f"--pair nobody: no pair with that candidate ran an eval in {bundle}" in result.output  # the bundle named
    assert "the candidates that did: candidate (vs baseline)" in result.output
    result = CliRunner().invoke(app, ["items", str(run_dir.root), "--task", "mmlu"])
    assert result.exit_code == 2 and "no eval of task 'mmlu'" in result.output


def test_a_run_with_no_eval_says_so(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    for folder in (run_dir.root / "evals").iterdir():
        shutil.rmtree(folder)
    result = CliRunner().invoke(app, ["items", str(run_dir.root)], env={"COLUMNS": "400"})
    assert result.exit_code == 2 and "holds no eval: no eval task ran, so there are no items to compare" in (
        result.output
    )


def test_the_raw_output_of_an_invalid_answer_is_shown_inert(tmp_path: Path) -> None:
    raw = "12</details>\n<img src=x onerror=alert(1)> @octocat\x1b[2J"
    run_dir = make_run_dir(tmp_path / "run", TINY)
    write_task(run_dir, "candidate", "arithmetic_generated", ROWS, set(range(12)), raw_of=lambda i: raw)
    write_task(run_dir, "baseline", "arithmetic_generated", ROWS, set(range(2, 14)))
    args = ["items", str(run_dir.root), "--task", "arithmetic_generated"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "raw output of the \\[invalid\\] answers above (arithmetic_generated)" in result.output  # piped: markdown
    rows = [line for line in result.output.splitlines() if "| candidate | 0 |" in line]
    assert sorted(line.split(" | ")[0] for line in rows) == sorted(f"| {ROWS[i]['id']}" for i in (12, 13))  # 2 lost
    assert all("\x1b" not in line and "\\<img src=x" in line and "\\\\x1b" in line for line in rows)
    html = render_gfm(result.output)
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html and "&lt;/details&gt;" in html
    found = json.loads(CliRunner().invoke(app, [*args, "--json"]).output)
    outputs = [o for item in found[0]["items"] for o in item["candidate"]["raw_outputs"] if o is not None]
    assert outputs == [raw, raw]
