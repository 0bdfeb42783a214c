"""The exported JSON Schemas match the pydantic models; the registry and migrations behave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byog.core.errors import UsageError
from byog.schemas.export import SCHEMA_DIR, drift, export
from byog.schemas.migrate import MIGRATIONS, migrate
from byog.schemas.registry import entry_for, load_all


def test_committed_schemas_match_the_models() -> None:
    problems = drift()
    assert problems == [], f"run `python -m byog.schemas.export`: {problems}"


def test_drift_is_detected(tmp_path: Path) -> None:
    export(tmp_path)
    assert drift(tmp_path) == []
    plan = tmp_path / "plan.schema.json"
    plan.write_text(plan.read_text().replace('"name"', '"nom"', 1))
    (tmp_path / "stale.schema.json").write_text("{}")
    assert drift(tmp_path) == ["plan.schema.json", "stale.schema.json"]


def test_every_bundle_file_kind_has_a_model() -> None:
    names = set(load_all())
    assert {"plan", "env", "server", "summary", "manifest", "signer", "claims", "policy"} <= names
    assert entry_for("plan.yaml").name == "plan"
    assert entry_for("servers/candidate/server.json").name == "server"
    assert entry_for("manifest.intoto.json").name == "manifest"
    assert entry_for("report.md") is None
    doc = json.loads((SCHEMA_DIR / "manifest.schema.json").read_text())
    assert doc["x-byog-schema-version"] == 1 and "_type" in doc["properties"]


def test_the_plan_schema_is_the_plan_model_not_a_copy() -> None:
    from byog.schemas.plan import Plan

    assert load_all()["plan"].model is Plan


def test_migration_hook_upgrades_and_refuses_the_future(monkeypatch: pytest.MonkeyPatch) -> None:
    assert migrate("summary", {"schema_version": 14, "x": 1}) == {"schema_version": 14, "x": 1}
    assert migrate("summary", {"schema_version": 1, "x": 1}) == {
        "schema_version": 14,
        "x": 1,
    }  # 1 -> 2 -> ... -> 14 add only defaults
    with pytest.raises(UsageError, match="newer than this byog"):
        migrate("summary", {"schema_version": 15})
    with pytest.raises(UsageError, match="positive integer"):
        migrate("summary", {"schema_version": "1"})
    # A v15 summary would add one step; simulate it.
    from byog.schemas import registry

    entry = registry.REGISTRY["summary"]
    monkeypatch.setitem(registry.REGISTRY, "summary", type(entry)(entry.name, entry.model, 15, entry.files, entry.kind))
    monkeypatch.setitem(
        MIGRATIONS, ("summary", 14), lambda doc: {"schema_version": doc["schema_version"], "renamed": doc["old"]}
    )
    assert migrate("summary", {"schema_version": 14, "old": 5}) == {"schema_version": 15, "renamed": 5}
