"""docs/architecture.md names only modules and runtimes that exist: every `path.py` or `folder/` it
quotes is a file or folder of byog/, and every runtime it lists in backticks is registered."""

from __future__ import annotations

import re
from pathlib import Path

import byog
from byog.schemas.plan import SERVER_CONFIGS

ROOT = Path(byog.__file__).parent
DOC = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_every_module_the_doc_names_exists() -> None:
    named = set(re.findall(r"`((?:[a-z_]+/)+[a-z_*]+\.py)`", DOC)) | set(re.findall(r"\(([a-z_]+/[a-z_]+\.py)", DOC))
    missing = []
    for name in sorted(named):
        path = name.removeprefix("byog/")
        candidates = [ROOT / path, ROOT.parent / name]
        if not any(p.exists() or list(p.parent.glob(p.name)) for p in candidates):
            missing.append(name)
    assert named and missing == []


def test_every_runtime_the_doc_lists_is_registered() -> None:
    sentence = DOC.split("Runtimes: ", 1)[1].split("Every runtime records", 1)[0]
    assert set(re.findall(r"`([a-z]+)`", sentence)) == set(SERVER_CONFIGS)
