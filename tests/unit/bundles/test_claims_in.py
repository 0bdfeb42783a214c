"""Claims by the front door: matched to a measured point before anything is signed, given twice = once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from byog.bundles.claims_in import read_claims_file, take_claims
from byog.bundles.finalize import seal_and_pack
from byog.cli import app
from byog.core.errors import PlanProblems
from byog.core.paths import CLAIMS_NAME, RunDir
from byog.schemas.summary import read_summary
from tests.support.synthetic import SyntheticSpec, make_run_dir

runner = CliRunner()


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    spec = SyntheticSpec(batch_sizes=(1, 2), isl=4, osl=8, warmup_waves=0, waves=2, eval_items=4, log_lines=3)
    return make_run_dir(tmp_path_factory.mktemp("claims") / "run", spec)


@pytest.fixture()
def run_dir(measured: RunDir, tmp_path: Path) -> RunDir:
    copy = tmp_path / "run"
    shutil.copytree(measured.root, copy)
    return RunDir(copy)


def _claims(path: Path, *claims: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump({"schema_version": 1, "claims": list(claims)}))
    return path


def _point_ids(rd: RunDir) -> list[str]:
    return sorted({p.point_id for p in read_summary(rd.summary_json).bench.points})


def test_a_claim_matching_no_point_is_refused_before_signing_naming_the_nearest(
    run_dir: RunDir, tmp_path: Path
) -> None:
    near = _point_ids(run_dir)[0]
    typo = near.replace("b1", "b16")
    claims = _claims(
        tmp_path / "c.yaml",
        {"name": "typo", "server": "candidate", "point": typo, "metric": "decode_tok_s", "value": 100},
        {"name": "no such server", "server": "candidat", "point": near, "metric": "decode_tok_s", "value": 100},
    )
    result = runner.invoke(app, ["bundle", "pack", str(run_dir.root), "--no-sign", "--claims", str(claims)])
    assert result.exit_code == 2, result.output
    assert "2 problems, nothing signed" in result.output
    assert f"claim 'typo': candidate point '{typo}' matches no point in summary.json" not in result.output
    assert f"claim 'typo': candidate point '{typo}' matches no point; nearest: {near}" in result.output
    assert "claim 'no such server': candidat point" in result.output and "servers with points: baseline, candidate" in (
        result.output
    )
    assert not (run_dir.root / "bundle.tar.gz").exists() and not (run_dir.root / CLAIMS_NAME).exists()


def test_a_claim_given_twice_is_merged_with_a_note(run_dir: RunDir, tmp_path: Path) -> None:
    claim = {"name": "b1", "server": "candidate", "point": _point_ids(run_dir)[0], "metric": "decode_tok_s", "value": 1}
    _claims(run_dir.root / CLAIMS_NAME, claim)
    notes = take_claims(run_dir, read_summary(run_dir.summary_json), _claims(tmp_path / "c.yaml", claim))
    assert notes == [f"claim 'b1' is already in {CLAIMS_NAME}: merged into one"]
    assert len(read_claims_file(run_dir.root / CLAIMS_NAME)) == 1


def test_one_name_for_two_different_claims_is_refused(run_dir: RunDir, tmp_path: Path) -> None:
    claim = {"name": "b1", "server": "candidate", "point": _point_ids(run_dir)[0], "metric": "decode_tok_s", "value": 1}
    _claims(run_dir.root / CLAIMS_NAME, claim)
    with pytest.raises(PlanProblems, match="'b1' is in claims.yaml and in the file with different content"):
        take_claims(run_dir, read_summary(run_dir.summary_json), _claims(tmp_path / "c.yaml", {**claim, "value": 2}))


def test_pack_signs_the_claims_given_into_the_bundle(run_dir: RunDir, tmp_path: Path) -> None:
    claim = {"name": "b1", "server": "candidate", "point": _point_ids(run_dir)[0], "metric": "decode_tok_s", "value": 1}
    packed = seal_and_pack(run_dir, sign=False, claims=_claims(tmp_path / "c.yaml", claim))
    assert packed.bundle.is_file()
    assert [c.name for c in read_claims_file(run_dir.root / CLAIMS_NAME)] == ["b1"]
