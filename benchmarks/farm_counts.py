"""Farm-style size counts of byog/ (issue 52): functions over 80 and over 50 lines, the count of
``dict[str, Any]``, and modules over 500 lines.

    python benchmarks/farm_counts.py [--repo PATH]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    root = parser.parse_args().repo / "byog"
    over80, over50, big, dict_any = [], [], [], 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        dict_any += text.count("dict[str, Any]")
        if len(text.splitlines()) > 500:
            big.append(f"{path.relative_to(root.parent)} ({len(text.splitlines())})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                name = f"{path.relative_to(root.parent)}:{node.name} ({length})"
                (over80 if length > 80 else over50 if length > 50 else []).append(name)
    print(f"functions > 80 lines: {len(over80)}  {', '.join(over80)}")
    print(f"functions > 50 lines: {len(over80) + len(over50)}")
    print(f"dict[str, Any]: {dict_any}")
    print(f"modules > 500 lines: {len(big)}  {', '.join(big)}")


if __name__ == "__main__":
    main()
