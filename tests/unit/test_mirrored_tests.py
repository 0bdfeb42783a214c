"""Every byog module has its unit test module at the mirror path (byog/a/b.py -> tests/unit/a/test_b.py),
or is listed here with the reason it has none.

A reason either starts "no logic:" (then the module defines no function or class) or names the test
files that exercise the module (each must exist and import it, or a byog module that does, at most
three imports away). A package ``__init__.py`` that defines nothing needs no entry. An entry whose
module is gone or has gained its mirror is stale.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from byog.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = ("datasets",)  # data files shipped with byog, no code

EXEMPT: dict[str, str] = {
    "byog/bench/server_api.py": "the server's dev-mode and metrics routes: tests/unit/bench/test_sweep.py",
    "byog/schemas/phases.py": "the phase record's model: tests/unit/analysis/test_phases.py",
    "byog/__init__.py": "the lazy `byog.open`: tests/unit/bundles/test_results.py",
    "byog/__main__.py": "no logic: `python -m byog` calls byog.cli.main",
    "byog/analysis/calibration.py": "tested in tests/unit/pipeline/test_calibrate.py",
    "byog/analysis/counters.py": "tested in tests/unit/analysis/test_metrics.py",
    "byog/analysis/eval_summary.py": "tested in tests/unit/plans/test_tiers.py",
    "byog/analysis/numerics_summary.py": "tested in tests/unit/benchmarks/test_numerics_results.py",
    "byog/analysis/points.py": "claims and policy find their points through it: tests/unit/analysis/test_claims.py",
    "byog/analysis/reproduction_defaults.py": "no logic: reproduce's default numbers, shared with the pipeline",
    "byog/analysis/sessions.py": "tested in tests/unit/analysis/test_frontier.py",
    "byog/analysis/summary.py": "tested in tests/unit/analysis/test_launches.py",
    "byog/bench/ceiling.py": "tested in tests/unit/bench/test_sweep.py",
    "byog/bench/workloads.py": "tested in tests/unit/bench/test_sweep.py",
    "byog/bundles/checks/attestations.py": "a verify check: tests/unit/bundles/test_attestations.py",
    "byog/bundles/checks/bounds.py": "a verify check: tests/unit/bundles/test_bounds.py",
    "byog/bundles/checks/claims.py": "a verify check: tests/unit/bundles/test_verify.py",
    "byog/bundles/checks/integrity.py": "verify's manifest and hashes: tests/unit/bundles/test_verify.py",
    "byog/bundles/checks/policy.py": "a verify check: tests/unit/bundles/test_verify.py",
    "byog/bundles/checks/predicate.py": "a verify check: tests/unit/bundles/test_verify.py",
    "byog/bundles/checks/recompute.py": "verify's summary and report: tests/unit/bundles/test_mutation.py",
    "byog/bundles/checks/signature.py": "verify's signature and subject: tests/unit/bundles/test_verify_subject.py",
    "byog/bundles/checks/tasks.py": "a verify check: tests/unit/bundles/test_verify_tasks.py",
    "byog/bundles/comment.py": "the PR comment's report: tests/unit/bundles/test_pr.py",
    "byog/bundles/finalize.py": "tested in tests/unit/bundles/test_sign.py",
    "byog/bundles/isolate.py": "tested in tests/unit/bundles/test_bounds.py",
    "byog/bundles/items.py": "tested in tests/unit/bundles/test_results.py",
    "byog/bundles/keys.py": "tested in tests/unit/bundles/test_sign.py",
    "byog/bundles/manifest.py": "tested in tests/unit/bundles/test_pack.py",
    "byog/bundles/publish.py": "`byog report` and `byog attach`: tests/unit/report/test_plots.py",
    "byog/cli/__init__.py": "builds the app with only the command asked for: tests/unit/cli/test_startup.py",
    "byog/cli/bundles.py": "typer commands: tests/unit/bundles/test_verify.py, tests/unit/bundles/test_parts.py",
    "byog/cli/check.py": "typer commands: tests/integration/test_numerics_cpu.py",
    "byog/cli/pr.py": "typer commands: tests/unit/bundles/test_pr.py",
    "byog/cli/reproduce.py": "a typer command: tests/unit/pipeline/test_reproduce.py",
    "byog/cli/run.py": "typer commands: tests/unit/plans/test_profiles.py, tests/unit/cli/test_wrong_input.py",
    "byog/cli/slurm.py": "a typer command: tests/unit/pipeline/test_slurm_submit.py",
    "byog/core/canonical.py": "tested in tests/unit/bundles/test_pack.py",
    "byog/core/errors.py": "tested in tests/unit/runtimes/test_docker.py",
    "byog/core/io.py": "tested in tests/unit/pipeline/test_calibrate.py",
    "byog/core/paths.py": "tested in tests/unit/core/test_reporter.py",
    "byog/correctness/__init__.py": "no logic: package marker",
    "byog/correctness/conformance.py": "tested in tests/unit/analysis/test_conformance_stats.py",
    "byog/correctness/prompts.py": "the numerics prompt set: tests/unit/pipeline/test_numerics.py",
    "byog/evals/mrcr_generate.py": "tested in tests/unit/evals/test_mrcr.py",
    "byog/evals/mrcr_grade.py": "tested in tests/unit/evals/test_mrcr.py",
    "byog/evals/mrcr_tokens.py": "tested in tests/unit/evals/test_mrcr.py",
    "byog/images/build.py": "tested in tests/unit/runtimes/test_docker.py",
    "byog/images/engine.py": "tested in tests/unit/images/test_wheel_layer.py",
    "byog/images/fingerprint.py": "tested in tests/unit/schemas/test_records.py",
    "byog/images/host_python.py": "mounts the host's Python into a container: tests/integration/test_wheel_image.py",
    "byog/images/inspect.py": "tested in tests/unit/cli/test_images.py",
    "byog/images/models.py": "prepares real model files (hub, GGUF): tests/integration/test_spec_cpu.py",
    "byog/images/tags.py": "tested in tests/unit/images/test_wheel_layer.py",
    "byog/images/vllm_args_probe.py": "runs in a server's interpreter: tests/integration/test_e2e_run.py",
    "byog/pipeline/activity.py": "the time records of a run: tests/unit/pipeline/test_interleave.py",
    "byog/pipeline/derive.py": "tested in tests/unit/core/test_reporter.py",
    "byog/pipeline/interleave_check.py": "tested in tests/unit/pipeline/test_interleave.py",
    "byog/pipeline/kv_overview.py": "the plan view's KV lines: tests/unit/pipeline/test_planview.py",
    "byog/pipeline/launch.py": "tested in tests/unit/pipeline/test_interleave.py",
    "byog/pipeline/serve.py": "`byog serve` holds a real server: tests/integration/test_runtime_local.py",
    "byog/pipeline/signals.py": "Ctrl-C and SIGTERM during a run: tests/unit/pipeline/test_interrupt.py",
    "byog/plans/claims_files.py": "tested in tests/unit/plans/test_claims.py",
    "byog/plans/load.py": "tested in tests/unit/plans/test_profiles.py",
    "byog/plans/numerics_menu.py": "tested in tests/unit/plans/test_numerics_roles.py",
    "byog/report/agentic.py": "tested in tests/unit/bench/test_agentic_sweep.py",
    "byog/report/changes.py": "the first screen's change lines: tests/unit/report/test_first_screen.py",
    "byog/report/context.py": "tested in tests/unit/report/test_accuracy.py",
    "byog/report/legacy_v1.py": "tested in tests/unit/report/test_versions.py",
    "byog/report/sections/agentic.py": "a report section: tests/unit/report/test_markdown.py",
    "byog/report/sections/decode.py": "tested in tests/unit/report/test_decode.py",
    "byog/report/sections/environment.py": "a report section: tests/unit/report/test_environment_identity.py",
    "byog/report/sections/figures.py": "a report section: tests/unit/report/test_plots.py",
    "byog/report/sections/headline.py": "tested in tests/unit/report/test_accuracy.py",
    "byog/report/sections/launches.py": "a report section: tests/unit/report/test_markdown.py",
    "byog/report/sections/numerics.py": "a report section: tests/unit/report/test_numerics.py",
    "byog/report/sections/reproduction.py": "a report section: tests/unit/analysis/test_reproduction.py",
    "byog/report/sections/signer.py": "a report section: tests/unit/report/test_markdown.py",
    "byog/runtimes/cleanup.py": "removes leftover containers: tests/integration/test_docker_runtime.py",
    "byog/runtimes/container.py": "tested in tests/unit/runtimes/test_docker.py",
    "byog/runtimes/docker_nodes.py": "tested in tests/unit/images/test_wheel_layer.py",
    "byog/runtimes/identity.py": "tested in tests/unit/runtimes/test_identity_probe.py",
    "byog/runtimes/launch.py": "tested in tests/unit/runtimes/test_cluster_plan.py",
    "byog/runtimes/local.py": "tested in tests/unit/runtimes/test_registry.py",
    "byog/runtimes/nodes.py": "tested in tests/unit/runtimes/test_cluster_plan.py",
    "byog/runtimes/ssh_nodes.py": "tested in tests/unit/runtimes/test_cluster.py",
    "byog/schemas/bench.py": "tested in tests/unit/schemas/test_chunk_timing.py",
    "byog/schemas/calibration.py": "tested in tests/unit/pipeline/test_calibrate.py",
    "byog/schemas/claims.py": "tested in tests/unit/plans/test_claims.py",
    "byog/schemas/env.py": "tested in tests/unit/schemas/test_records.py",
    "byog/schemas/evals.py": "tested in tests/unit/plans/test_claims.py",
    "byog/schemas/image_labels.py": "tested in tests/unit/images/test_wheel_layer.py",
    "byog/schemas/manifest.py": "tested in tests/unit/bundles/test_verify_subject.py",
    "byog/schemas/migrate.py": "tested in tests/unit/schemas/test_export.py",
    "byog/schemas/numerics.py": "tested in tests/unit/analysis/test_numerics_headline.py",
    "byog/schemas/plan_pin.py": "tested in tests/unit/pipeline/test_opening.py",
    "byog/schemas/registry.py": "tested in tests/unit/schemas/test_export.py",
    "byog/schemas/reproduction.py": "tested in tests/unit/analysis/test_reproduction.py",
    "byog/schemas/server.py": "tested in tests/unit/schemas/test_records.py",
    "byog/schemas/summary.py": "tested in tests/unit/report/test_markdown.py",
}


def _modules(root: Path = ROOT) -> list[Path]:
    package = root / "byog"
    return sorted(p for p in package.rglob("*.py") if not set(SKIPPED) & set(p.relative_to(package).parts))


def _mirror(module: Path, root: Path = ROOT) -> Path:
    rel = module.relative_to(root / "byog")
    return root / "tests" / "unit" / rel.parent / f"test_{module.stem}.py"


def _defines_something(module: Path) -> bool:
    tree = ast.parse(module.read_text())
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for node in tree.body)


@functools.cache
def _imports(path: Path) -> frozenset[str]:
    """The byog (and tests.support) modules ``path`` imports anywhere in it (commands import inside
    their bodies). The CLI app (``byog.cli``, or ``tests.support.cli``'s ``python -m byog``) reaches
    every command module: its command table names them as strings."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    if found & {"byog.cli", "tests.support.cli"}:
        found |= {f"byog.cli.{target.split(':')[0]}" for target in COMMANDS.values()}
    return frozenset(n for n in found if n.startswith(("byog", "tests.support")) and _file(n) is not None)


def _file(dotted: str) -> Path | None:
    path = ROOT.joinpath(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _file_of(dotted: str) -> Path:
    found = _file(dotted)
    assert found is not None, dotted  # _imports keeps only modules with a file
    return found


def _reaches(test: Path, dotted: str, hops: int = 3) -> bool:
    """Whether ``test`` imports ``dotted``, or a byog module that does, within ``hops`` imports."""
    seen: set[str] = set()
    frontier = set(_imports(test))
    for _ in range(hops):
        if dotted in frontier:
            return True
        seen |= frontier
        frontier = {name for module in frontier for name in _imports(_file_of(module))} - seen
    return dotted in frontier


def _key(module: Path, root: Path = ROOT) -> str:
    return module.relative_to(root).as_posix()


def _unexplained(root: Path, exempt: dict[str, str]) -> list[str]:
    """The modules under ``root``/byog with neither a mirrored test module nor an entry in ``exempt``."""
    return [
        _key(m, root)
        for m in _modules(root)
        if not _mirror(m, root).exists()
        and _key(m, root) not in exempt
        and not (m.name == "__init__.py" and not _defines_something(m))
    ]


def test_every_module_has_its_mirror_or_a_reason() -> None:
    missing = _unexplained(ROOT, EXEMPT)
    assert missing == [], f"add tests/unit/<mirror>/test_<name>.py, or an EXEMPT entry with its reason: {missing}"


def test_no_stale_entry() -> None:
    stale = [key for key in EXEMPT if not (ROOT / key).exists() or _mirror(ROOT / key).exists()]
    assert stale == [], f"these modules are gone or have their mirror now; drop their entries: {stale}"


def test_each_reason_holds() -> None:
    wrong = []
    for key, reason in EXEMPT.items():
        module = ROOT / key
        if reason.startswith("no logic:"):
            if _defines_something(module):
                wrong.append(f"{key}: 'no logic' but it defines a function or class")
            continue
        named = re.findall(r"tests/[\w/]+\.py", reason)
        if not named:
            wrong.append(f"{key}: the reason names no test file")
        dotted = ".".join(module.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in named:
            test = ROOT / path
            if not test.is_file():
                wrong.append(f"{key}: {path} does not exist")
            elif not _reaches(test, dotted):
                wrong.append(f"{key}: {path} does not import it, nor a module that does (3 imports deep)")
    assert wrong == []


def test_the_check_finds_a_module_without_tests(tmp_path: Path) -> None:
    """Not vacuous: in a small tree, only the module with logic, no mirror and no entry is reported."""
    files = {
        "byog/a.py": "def f() -> int:\n    return 1\n",  # logic, no mirror: reported
        "byog/b.py": "def g() -> int:\n    return 2\n",
        "tests/unit/test_b.py": "",  # b's mirror
        "byog/c.py": "def h() -> int:\n    return 3\n",  # exempt below
        "byog/pkg/__init__.py": '"""a package marker"""\n',  # defines nothing: needs no entry
        "byog/pkg/d.py": "class D:\n    pass\n",  # logic, no mirror: reported
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _unexplained(tmp_path, {"byog/c.py": "why"}) == ["byog/a.py", "byog/pkg/d.py"]
