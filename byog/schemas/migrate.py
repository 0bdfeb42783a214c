"""Schema migrations: data written under an older ``schema_version`` is upgraded step by step.

``MIGRATIONS[(name, v)]`` turns a version-v document of schema ``name`` into version v+1. Version
1 is the first version, so there are no steps yet; :func:`migrate` still runs for every file
verify reads, so a v2 only adds entries here. A version newer than this byog knows is refused:
it cannot be read correctly, only guessed at.
"""

from __future__ import annotations

from typing import Any, Callable

from byog.errors import UsageError
from byog.schemas.registry import load_all

Migration = Callable[[dict[str, Any]], dict[str, Any]]

MIGRATIONS: dict[tuple[str, int], Migration] = {}


def register_migration(name: str, from_version: int) -> Callable[[Migration], Migration]:
    def decorate(fn: Migration) -> Migration:
        MIGRATIONS[(name, from_version)] = fn
        return fn

    return decorate


def migrate(name: str, data: dict[str, Any], *, label: str | None = None) -> dict[str, Any]:
    """Upgrade ``data`` (a document of schema ``name``) to the current version; refuse the future."""
    current = load_all()[name].version
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"{label or name}: schema_version must be a positive integer, not {version!r}")
    if version > current:
        raise UsageError(f"{label or name}: schema_version {version} is newer than this byog reads ({current}); upgrade byog")
    while version < current:
        step = MIGRATIONS.get((name, version))
        if step is None:
            raise UsageError(f"{label or name}: no migration from schema_version {version} of '{name}'")
        data = step(dict(data))
        version += 1
        data["schema_version"] = version
    return data
