"""Export every registered model to ``byog/schemas/<name>.schema.json`` (committed; a test checks drift).

python -m byog.schemas.export           # rewrite the files
python -m byog.schemas.export --check   # exit 1 and name the files that differ
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from byog.schemas.registry import SchemaEntry, load_all

SCHEMA_DIR = Path(__file__).resolve().parent
SUFFIX = ".schema.json"


def schema_document(entry: SchemaEntry) -> dict[str, Any]:
    doc = entry.model.model_json_schema(mode="validation")
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://byog.dev/schemas/{entry.name}/v{entry.version}",
        "x-byog-schema-version": entry.version,
        "x-byog-files": list(entry.files),
        "x-byog-kind": entry.kind,
        **doc,
    }
    return doc


def render(entry: SchemaEntry) -> str:
    return json.dumps(schema_document(entry), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def expected_files() -> dict[str, str]:
    return {f"{name}{SUFFIX}": render(entry) for name, entry in load_all().items()}


def drift(folder: Path = SCHEMA_DIR) -> list[str]:
    """File names that are missing, stale or extra compared with the models."""
    want = expected_files()
    have = {p.name for p in folder.glob(f"*{SUFFIX}")}
    problems = [
        name
        for name, text in want.items()
        if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text
    ]
    problems += sorted(have - set(want))
    return sorted(problems)


def export(folder: Path = SCHEMA_DIR) -> list[Path]:
    want = expected_files()
    for stale in folder.glob(f"*{SUFFIX}"):
        if stale.name not in want:
            stale.unlink()
    written = []
    for name, text in want.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        problems = drift()
        for name in problems:
            print(f"schema drift: byog/schemas/{name} does not match its model; run python -m byog.schemas.export")
        return 1 if problems else 0
    for path in export():
        print(path.relative_to(SCHEMA_DIR.parent.parent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
