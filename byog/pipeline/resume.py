"""Resuming a run: finding the run a plan left unfinished, and keeping what an edited plan did not change.

`byog run PLAN` resumes the newest unfinished run of the same plan (by its ``name``) under the runs
folder; ``--new`` starts over. A run is finished once ``summary.json`` is derived.

When the plan was edited since the stop, every raw record whose inputs are unchanged is kept and
the rest is moved aside (into ``.superseded/<UTC stamp>/`` inside the run directory, which no
bundle packs: nothing is deleted). A record's inputs:

- a bench point: the model, its server's config and the point as expanded (``BenchPoint``: load,
  ISL, OSL, prompts, seeds, waves, the servers it runs on); a rate search's probe: its workload;
- an eval: the model, its server's config, the task's ``EvalSpec`` and the plan's seeds;
- numerics and conformance: the model, every server, the pairs and the numerics spec;
- a server's record and log: its config. Derived files (summary, report, plots, seal) always go:
  they are derived again from what is kept.
"""

from __future__ import annotations

import datetime
import shlex
from pathlib import Path
from typing import Any

import yaml

from byog.bundles.pack import BUNDLE_NAME
from byog.core.io import atomic_write_text, read_json
from byog.core.paths import (
    ATTEMPTS_DIR,
    LAUNCH_PREFIX,
    MANIFEST_NAME,
    SIGNATURE_NAME,
    SIGNER_NAME,
    SUPERSEDED,
    RunDir,
)
from byog.core.settings import runs_dir
from byog.plans.expand import expand_plan
from byog.schemas.plan import Plan

_DERIVED = ("summary.json", "report.md", "plots", MANIFEST_NAME, SIGNATURE_NAME, SIGNER_NAME, BUNDLE_NAME)


def _recorded_name(run_dir: Path) -> str | None:
    try:
        data = yaml.safe_load((run_dir / "plan.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


def unfinished(run_dir: Path) -> bool:
    return (run_dir / "plan.yaml").is_file() and not (run_dir / "summary.json").is_file()


def newest_unfinished(plan_name: str, parent: Path | None = None) -> Path | None:
    """The newest run directory under ``parent`` (the runs folder) of a plan named ``plan_name``, unfinished."""
    folder = parent or runs_dir()
    if not folder.is_dir():
        return None
    runs = [d for d in folder.iterdir() if d.is_dir() and unfinished(d) and _recorded_name(d) == plan_name]
    return max(runs, key=lambda d: ((d / "plan.yaml").stat().st_mtime, d.name), default=None)


def resume_command(plan_ref: str | None, tier: str, root: Path | None, plan_name: str | None) -> str:
    """The exact command that picks this run up again: ``byog run PLAN`` when that finds it by itself
    (``root``/``plan_name`` None: no run directory yet, so the same command again)."""
    words = ["byog", "run"] + ([plan_ref] if plan_ref else []) + (["--tier", tier] if tier != "full" else [])
    if root is not None and (root / "plan.yaml").is_file():
        found = newest_unfinished(plan_name) if plan_name else None
        if found is None or found.resolve() != root.resolve():
            words += ["--run-dir", str(root)]
    elif root is not None:
        words += ["--run-dir", str(root)]
    return shlex.join(words)


# --- an edited plan -------------------------------------------------------------------------


def _dump(value: Any) -> Any:
    return None if value is None else value.model_dump(mode="json")


def _server_same(old: Plan, new: Plan, server: str) -> bool:
    return (
        old.model == new.model
        and server in new.servers
        and _dump(old.servers.get(server)) == _dump(new.servers[server])
    )


def _eval_spec(plan: Plan, server: str, task: str) -> Any:
    specs = [spec for spec in plan.evals if spec.task == task and server in plan.servers_for(spec)]
    return (_dump(specs[0]), plan.seeds) if specs else None


class _Points:
    """Each plan's expanded points, to tell a bench record whose point is unchanged."""

    def __init__(self, old: Plan, new: Plan) -> None:
        self.old, self.new = old, new
        self.before = {p.point_id: _dump(p) for p in expand_plan(old)}
        points = expand_plan(new)
        self.after = {p.point_id: _dump(p) for p in points}
        self.workload_of = {p.point_id: p.workload for p in points}

    def kept(self, server: str, record: Path, launch: int) -> bool:
        if not _server_same(self.old, self.new, server) or launch > self.new.launches_of(server):
            return False
        pid = record.stem
        if pid in self.workload_of and not self.new.measured_on(self.workload_of[pid], server, launch):
            return False  # the new plan runs this point on fewer launches
        if pid in self.before or pid in self.after:
            return pid in self.before and self.before[pid] == self.after.get(pid)
        try:  # a rate search's probe: kept while its workload is
            name = read_json(record)["point"]["workload"]
        except (OSError, ValueError, KeyError, TypeError):
            return False
        workload = _dump(_workload(self.new, name))
        return workload is not None and workload == _dump(_workload(self.old, name))


def _workload(plan: Plan, name: str) -> Any:
    return next((w for w in plan.workloads if (w.name or w.kind) == name), None)


def _numerics_same(old: Plan, new: Plan) -> bool:
    return (
        old.model == new.model
        and _dump(old.numerics) == _dump(new.numerics)
        and {n: _dump(c) for n, c in old.servers.items()} == {n: _dump(c) for n, c in new.servers.items()}
        and old.comparisons == new.comparisons
    )


def changed_records(rd: RunDir, old: Plan, new: Plan) -> tuple[list[Path], list[str], int]:
    """(files and folders to move aside, what re-runs as phrases, how many records are kept)."""
    root, points = rd.root, _Points(old, new)
    moved: list[Path] = []
    reruns: list[str] = []
    kept = 0
    for server_dir in sorted((root / "bench").glob("*")):
        server = server_dir.name
        # an earlier attempt of a re-measured point (attempts/) stays with the point's files
        for record in sorted(r for r in server_dir.glob("**/*.json") if r.parent.name != ATTEMPTS_DIR):
            launch_dir = record.parent.name
            launch = int(launch_dir.removeprefix(LAUNCH_PREFIX)) if launch_dir.startswith(LAUNCH_PREFIX) else 1
            if points.kept(server, record, launch):
                kept += 1
                continue
            moved += [record, record.with_suffix(".parquet")]
            reruns.append(f"bench {server}/{record.stem}" + (f" (launch {launch})" if launch > 1 else ""))
    for task_dir in sorted((root / "evals").glob("*/*")):
        server, task = task_dir.parent.name, task_dir.name
        if _server_same(old, new, server) and _eval_spec(old, server, task) == _eval_spec(new, server, task):
            kept += 1
            continue
        moved.append(task_dir)
        if _eval_spec(new, server, task) is not None:
            reruns.append(f"eval {task} on {server}")
    if not _numerics_same(old, new):
        for folder in ("numerics", "conformance"):
            if (root / folder).exists():
                moved.append(root / folder)
                reruns.append(folder)
    for server_dir in sorted((root / "servers").glob("*")):
        if not _server_same(old, new, server_dir.name):
            moved.append(server_dir)
    moved += [root / name for name in _DERIVED]
    return [p for p in moved if p.exists()], reruns, kept


def keep_unchanged(rd: RunDir, old: Plan, new: Plan, text: str) -> list[str]:
    """Move aside what the edit invalidates, record the new plan; the lines that say so."""
    moved, reruns, kept = changed_records(rd, old, new)
    if moved:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
        aside = rd.root / SUPERSEDED / stamp
        for path in moved:
            target = aside / path.relative_to(rd.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            path.rename(target)
        (aside / "plan.yaml").write_bytes(rd.plan_yaml.read_bytes())
    atomic_write_text(rd.plan_yaml, text)
    lines = [f"the plan changed since this run stopped: {kept} record(s) kept (their inputs are unchanged)"]
    lines.append("re-runs: " + (", ".join(reruns) if reruns else "nothing already measured"))
    if moved:
        lines.append(f"replaced records moved to {rd.root / SUPERSEDED}")
    return lines
