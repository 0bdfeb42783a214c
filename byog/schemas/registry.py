"""One registry of the pydantic models that describe the files of a bundle.

Each schema module (``plan``, ``env``, ``server``, ``summary``, ``manifest``, and the bench and
evals helpers' ``bench`` and ``evals``) calls :func:`register` at import time. Three things read
the registry: the JSON Schema export (``python -m byog.schemas.export``), the drift test, and
verify's schema check, which validates every bundle file whose path matches an entry's globs.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import pkgutil
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

FileKind = Literal["json", "yaml", "parquet"]


@dataclass(frozen=True)
class SchemaEntry:
    name: str  # file stem of the exported schema: byog/schemas/<name>.schema.json
    model: type[BaseModel]
    version: int  # the schema_version this model reads and writes
    files: tuple[str, ...] = ()  # globs of bundle paths this model validates (fnmatch, '/'-separated)
    kind: FileKind = "json"  # json/yaml: the whole file is one object; parquet: each row is one object
    # parquet: the row models of older layouts, as (last version with that layout, model), oldest first
    older_layouts: tuple[tuple[int, type[BaseModel]], ...] = ()

    def model_for(self, version: int | None) -> type[BaseModel]:
        """The row model of a parquet file of ``version`` (None: written before files recorded one).

        Raises ValueError for a version newer than this byog reads."""
        if version is None or version < self.version:
            for last, model in self.older_layouts:
                if version is None or version <= last:
                    return model
            return self.model
        if version > self.version:
            raise ValueError(f"schema_version {version} is newer than this byog reads ({self.version}); upgrade byog")
        return self.model

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile("|".join(fnmatch.translate(glob) for glob in self.files) or r"(?!)")

    def matches(self, path: str) -> bool:
        return self._pattern.match(path) is not None  # the globs as one regex: asked once per bundle file


REGISTRY: dict[str, SchemaEntry] = {}

# Modules of byog.schemas that hold no models of their own.
_NOT_SCHEMA_MODULES = {"registry", "export", "migrate", "chunk_timing"}


def register(
    name: str,
    model: type[BaseModel],
    *,
    version: int,
    files: tuple[str, ...] = (),
    kind: FileKind = "json",
    older_layouts: tuple[tuple[int, type[BaseModel]], ...] = (),
) -> type[BaseModel]:
    """Register ``model`` under ``name``; re-registering the same model is a no-op (module reloads)."""
    existing = REGISTRY.get(name)
    if existing is not None and existing.model.__qualname__ != model.__qualname__:
        raise ValueError(f"schema name '{name}' is already registered for {existing.model.__qualname__}")
    REGISTRY[name] = SchemaEntry(
        name=name, model=model, version=version, files=tuple(files), kind=kind, older_layouts=older_layouts
    )
    return model


@functools.cache
def _import_schema_modules() -> None:
    """Once per process: listing the package costs milliseconds, and migrate asks per file read."""
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name not in _NOT_SCHEMA_MODULES and not info.name.startswith("_"):
            importlib.import_module(f"byog.schemas.{info.name}")


def load_all() -> dict[str, SchemaEntry]:
    """Import every module of ``byog.schemas`` (each registers its models) and return the registry."""
    _import_schema_modules()
    return dict(sorted(REGISTRY.items()))


def entry_for(path: str) -> SchemaEntry | None:
    """The entry whose globs match a bundle path (first by name), or None for files no model describes."""
    for entry in load_all().values():
        if entry.matches(path):
            return entry
    return None
