"""No function in byog/ runs over 80 lines (issue 52's hygiene bar; benchmarks/farm_counts.py prints the
counts). Measured as farm_counts measures: from the `def` line to the function's last line."""

from __future__ import annotations

import ast
from pathlib import Path

import byog

LIMIT = 80


def _too_long(source: str) -> list[tuple[str, int]]:
    return [
        (node.name, length)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > LIMIT
    ]


def test_no_function_in_byog_is_over_80_lines() -> None:
    root = Path(byog.__file__).parent
    found = [
        f"{path.relative_to(root.parent)}:{name} ({length} lines)"
        for path in sorted(root.rglob("*.py"))
        for name, length in _too_long(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "split these functions: " + ", ".join(found)


def test_the_rule_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    assert _too_long(f"def long():\n{body}\n") == [("long", LIMIT + 1)]
    assert _too_long("def short():\n    return 1\n") == []
