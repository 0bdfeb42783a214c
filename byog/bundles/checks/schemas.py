"""Schemas: every bundle file a registered model describes validates against it.

JSON and YAML files (parsed within bounds by the bounds check) are migrated to the current
``schema_version`` and validated; a parquet file's columns are held against the row model of its
layout (the version its metadata records, ``SchemaEntry.model_for``): required fields present, no
unknown columns when the model forbids extras, column types compatible with the field types. The
rows' values are read by the recompute checks, which fail on anything unreadable.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from byog.bundles.checks.base import VerifyContext, check
from byog.core.errors import CheckFailed
from byog.schemas.migrate import migrate
from byog.schemas.registry import SchemaEntry, load_all
from byog.schemas.tables import file_version

REQUIRED_FILES = ("plan.yaml", "env.json", "summary.json", "report.md")


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "(top level)"
    return f"'{where}': {first['msg']}"


def _validate_document(entry: SchemaEntry, name: str, doc: Any) -> None:
    if not isinstance(doc, dict):
        raise CheckFailed(f"{name} must hold a {entry.kind.upper()} object")
    doc = migrate(entry.name, doc, label=name)
    try:
        entry.model.model_validate(doc)
    except ValidationError as err:
        raise CheckFailed(f"{name} does not match the {entry.name} schema at {_first_error(err)}") from None


def _json_types(schema: dict[str, Any]) -> set[str]:
    if "type" in schema:
        kinds = schema["type"]
        return set(kinds) if isinstance(kinds, list) else {kinds}
    found: set[str] = set()
    for option in schema.get("anyOf", []) + schema.get("oneOf", []):
        found |= _json_types(option)
    return found or {"any"}


def _arrow_kind(arrow_type: Any) -> set[str]:
    import pyarrow as pa

    t = pa.types
    if t.is_boolean(arrow_type):
        return {"boolean"}
    if t.is_integer(arrow_type):
        return {"integer", "number"}
    if t.is_floating(arrow_type) or t.is_decimal(arrow_type):
        return {"number"}
    if t.is_string(arrow_type) or t.is_large_string(arrow_type) or t.is_binary(arrow_type):
        return {"string"}
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        return {"array"}
    if t.is_struct(arrow_type) or t.is_map(arrow_type):
        return {"object"}
    if t.is_null(arrow_type):
        return {"null"}
    if t.is_timestamp(arrow_type) or t.is_date(arrow_type):
        return {"string"}
    return {"any"}


@functools.cache
def _json_properties(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON-schema properties, built once per model (a bundle has a parquet file per point)."""
    properties: dict[str, Any] = model.model_json_schema()["properties"]
    return properties


def _validate_parquet_columns(entry: SchemaEntry, name: str, path: Path) -> None:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as err:  # any pyarrow error means unreadable
        raise CheckFailed(f"{name} is not a readable parquet file: {str(err).splitlines()[0]}") from None
    try:
        model: type[BaseModel] = entry.model_for(file_version(schema.metadata))
    except ValueError as err:
        raise CheckFailed(f"{name}: {err}") from None
    properties = _json_properties(model)
    columns = {field.name: field.type for field in schema}
    for field_name, info in model.model_fields.items():
        key = info.alias or field_name
        if info.is_required() and key not in columns:
            raise CheckFailed(f"{name} lacks the column '{key}' the {entry.name} schema requires")
    if model.model_config.get("extra") == "forbid":
        unknown = sorted(set(columns) - {info.alias or n for n, info in model.model_fields.items()})
        if unknown:
            raise CheckFailed(f"{name} has columns the {entry.name} schema does not know: {', '.join(unknown[:5])}")
    for column, arrow_type in columns.items():
        if column not in properties:
            continue
        allowed = _json_types(properties[column])
        have = _arrow_kind(arrow_type)
        if "any" not in allowed and "any" not in have and not (have & allowed):
            raise CheckFailed(
                f"{name} column '{column}' is {arrow_type}, but the {entry.name} schema wants "
                f"{'/'.join(sorted(allowed))}"
            )


@check("schemas", requires=("bounds",))
def files_match_schemas(ctx: VerifyContext) -> str:
    missing = [name for name in REQUIRED_FILES if not ctx.has(name)]
    if missing:
        raise CheckFailed(f"the bundle lacks {', '.join(missing)}")
    entries = load_all().values()
    counted = 0
    for name in ctx.names:
        entry = next((e for e in entries if e.matches(name)), None)
        if entry is None:
            continue
        if entry.kind == "parquet":
            _validate_parquet_columns(entry, name, ctx.root / name)
        elif name in ctx.parsed:
            _validate_document(entry, name, ctx.parsed[name])
        else:
            raise CheckFailed(
                f"{name} is not a .json or .yaml file, so it cannot be the {entry.kind.upper()} its schema describes"
            )
        counted += 1
    return f"{counted} files match their schemas"
