"""verify's tasks check: a signed bundle (trusted signer) whose plan names an eval task outside
byog's registry fails it in one sentence, and `byog reproduce` (which re-runs only a bundle that
verifies) refuses it before planning anything; an honest bundle passes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.bundles.finalize import seal_and_pack
from byog.bundles.verify import verify_bundle
from byog.cli import app
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

runner = CliRunner()
SPEC = SyntheticSpec(batch_sizes=(1,), eval_items=4)
REFUSAL = "the bundle's eval task '/etc/passwd' is not in byog's registry (aime25, arithmetic_generated,"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tasks")
    key, pub = make_key(folder, "contributor")
    out = {"signers": allowed_signers(folder / "allowed_signers", [("contributor@example.com", pub)])}
    honest = plan_yaml(SPEC)
    plans = {"honest": honest, "passwd": honest.replace("evals:\n", "evals:\n  - {task: /etc/passwd, limit: 4}\n")}
    for name, text in plans.items():
        rd = make_run_dir(folder / f"run-{name}", SPEC, plan_text=text)
        rd.plots_dir.mkdir(exist_ok=True)
        out[name] = seal_and_pack(rd, folder / f"{name}.tar.gz", key=key, plots=None).bundle
    return out


def test_an_eval_task_outside_byogs_registry_fails_verify_in_one_sentence(bundles: dict[str, Path]) -> None:
    report = verify_bundle(bundles["passwd"], allowed_signers=bundles["signers"])
    check = next(r for r in report.results if r.name == "tasks")
    assert not report.verified and check.status == "fail" and check.message.startswith(REFUSAL), check
    honest = verify_bundle(bundles["honest"], allowed_signers=bundles["signers"])
    assert honest.verified
    assert [(r.status, r.message) for r in honest.results if r.name == "tasks"] == [
        ("pass", "eval tasks gsm8k are byog's")
    ]


def test_reproduce_refuses_a_bundle_with_an_eval_task_outside_the_registry(
    bundles: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, ["reproduce", str(bundles["passwd"]), "--allowed-signers", str(bundles["signers"]), "--dry-run"]
    )
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "does not verify" in result.output and REFUSAL in result.output
