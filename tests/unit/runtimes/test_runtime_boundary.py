"""Only byog/runtimes and the config registry (byog/schemas/runtime_configs.py) know runtimes apart: nowhere else
is a server config tested with ``isinstance`` against a runtime's config class, or its ``runtime``
compared with a name. Everything else asks the config (its facts) or ``runtime_for`` (its behaviour),
so a new runtime is one config class and one runtime module, and nothing falls through to ``local``."""

from __future__ import annotations

import ast
from pathlib import Path

import byog
from byog.schemas.plan import SERVER_CONFIGS, EndpointConfig, HostedConfig, LaunchedConfig

ROOT = Path(byog.__file__).parent
# schemas/migrate.py: plans of old schema versions, whose runtimes are fixed names
ALLOWED = ("runtimes/", "schemas/runtime_configs.py", "schemas/migrate.py")
CONFIG_CLASSES = {cls.__name__ for cls in (*SERVER_CONFIGS.values(), EndpointConfig, LaunchedConfig, HostedConfig)}


def _names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _is_runtime(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "runtime"
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "runtime"


def _tests_a_config_class(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2):
        return False
    return node.func.id in ("isinstance", "issubclass") and bool(_names(node.args[1]) & CONFIG_CLASSES)


def offences(source: str) -> list[str]:
    """Each ``isinstance(x, <a runtime's config class>)`` and each ``<x>.runtime == / in <names>`` of ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if _tests_a_config_class(node):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Compare) and any(_is_runtime(side) for side in (node.left, *node.comparators)):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_outside_runtimes_tells_runtimes_apart() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(ALLOWED):
            continue
        found += [f"byog/{relative} {offence}" for offence in offences(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_scan_finds_both_kinds_of_test() -> None:
    source = (
        "if isinstance(config, DockerConfig | SlurmConfig): pass\n"
        "if config.runtime == 'endpoint': pass\n"
        "if server['runtime'] in ('local', 'ssh'): pass\n"
        "print(config.runtime)\n"
    )
    assert [line.split(":")[0] for line in offences(source)] == ["line 1", "line 2", "line 3"]
