"""A script of benchmarks/ loaded as a module (benchmarks/ is no package): its functions and figures
for the tests that re-print committed results or run a script small."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str) -> ModuleType:
    """benchmarks/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(name: str, *args: str) -> str:
    """``python benchmarks/<name>.py ARGS`` as a user runs it: its standard output (a non-zero exit fails)."""
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), *args], capture_output=True, text=True, check=True, timeout=300
    ).stdout
