"""Every environment variable byog reads is named once, in byog.core.settings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import byog
from byog.core import settings

PACKAGE = Path(byog.__file__).resolve().parent
# os.environ.get("BYOG_X"), os.environ["BYOG_X"], os.getenv("BYOG_X"), a dict literal {"BYOG_X": ...} for a child
READ = re.compile(r"""(environ(\.get)?\s*[\[(]|getenv\(|setdefault\(|pop\()\s*["']BYOG_""")
ASSIGNED = re.compile(r"""^\s*[A-Z_]+\s*=\s*["']BYOG_[A-Z_]+["']""", re.MULTILINE)


def _sources() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "datasets" not in p.parts and p.name != "settings.py"]


def test_no_module_but_settings_spells_a_variable_it_reads() -> None:
    found = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(PACKAGE)}: {m.group(0)}" for m in READ.finditer(text)]
        found += [f"{path.relative_to(PACKAGE)}: {m.group(0).strip()}" for m in ASSIGNED.finditer(text)]
    assert found == []


def test_the_table_lists_every_variable_settings_names() -> None:
    names = {value for key, value in vars(settings).items() if key.endswith("_ENV")}
    assert names and all(f"| {name} " in (settings.__doc__ or "") for name in names), names


def test_runs_dir_is_the_variable_else_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(settings.RUNS_DIR_ENV, raising=False)
    assert settings.runs_dir() == Path("runs")
    monkeypatch.setenv(settings.RUNS_DIR_ENV, "")
    assert settings.runs_dir() == Path("runs")
    monkeypatch.setenv(settings.RUNS_DIR_ENV, str(tmp_path))
    assert settings.runs_dir() == tmp_path
