"""Opening a run directory pins the plan file before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.io import read_json
from byog.pipeline import opening
from byog.plans.pin import sha256_hex
from byog.schemas.plan_pin import PLAN_PIN_NAME, PlanPin
from tests.support.bundles_kit import TINY
from tests.support.synthetic import plan_yaml


def test_a_new_run_directory_records_the_plan_pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opening, "check_before_start", lambda plan, ref: None)  # no model or machine checks here
    plan_file = tmp_path / "pr.yaml"
    data = ("# comment kept\r\n" + plan_yaml(TINY)).encode()
    plan_file.write_bytes(data)
    _, rd = opening.open_run_dir(str(plan_file), tmp_path / "run")
    pin = PlanPin.model_validate(read_json(rd.root / PLAN_PIN_NAME))
    assert pin.file_sha256 == sha256_hex(data) and pin.source == str(plan_file) and pin.tier == "full"
    assert pin.plan_yaml_sha256 == sha256_hex(rd.plan_yaml.read_bytes())
    _, tiered = opening.open_run_dir("smoke", tmp_path / "smoke", tier="smoke")
    assert PlanPin.model_validate(read_json(tiered.root / PLAN_PIN_NAME)).tier == "smoke"
