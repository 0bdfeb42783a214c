"""The run directory: one place that knows where every file of a run lives.

    runs/<id>/
      plan.yaml  env.json
      servers/<server>/{server.json, server.log, metrics-<point>-{before,after}.prom}
      bench/<server>/<point>.parquet   raw per-request rows (source of truth)
      bench/<server>/<point>.json      the point's record: spec, counters, validity (raw)
      bench/<server>/attempts/<point>-<n>.{json,parquet}   earlier attempts of a re-measured point
      evals/<server>/<task>/{items.parquet, results.json}
      evals/<server>/<task>/.looks/look-<k>.json   a look's rows while two servers' evals run at once
                                                    in the same looks (never bundled: a dot folder)
      numerics/<server>/<pass>.parquet  raw per-position answers of the numerics differential
      numerics/<server>/record.json     its prompts, passes and wall times (written last)
      conformance/<server>.json         the conformance checks of one server
      summary.json  report.md  plots/*.png     (derived from the raw files above)

    With ``launches: R`` (or an A/A pair) launch r >= 2 of a server keeps its files apart, one
    folder down, so launch 1 (every run with R = 1) keeps the paths above:
      servers/<server>/launch-<r>/{server.json, server.log, metrics-*.prom}
      bench/<server>/launch-<r>/<point>.{parquet,json}
      signer.json  manifest.intoto.json  manifest.intoto.json.sig  claims.yaml   (the seal)

A file exists only once complete (atomic writes), so "complete" is "present".
"""

from __future__ import annotations

import datetime
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from byog.core.errors import UsageError

MANIFEST_NAME = "manifest.intoto.json"
PLOTS_BASE = "plots/"  # relative to report.md: works inside the unpacked bundle and the run directory
SIGNATURE_NAME = "manifest.intoto.json.sig"
CLAIMS_NAME = "claims.yaml"
SUPERSEDED = ".superseded"  # records moved aside inside a run directory (no bundle packs a dot-folder)
ATTEMPTS_DIR = "attempts"  # bench/<server>/attempts/: the earlier attempts of re-measured points
SIGNER_NAME = "signer.json"  # the key that signs, written before sealing so report.md can name it

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def safe_name(name: str, what: str) -> str:
    """Names become path components: refuse anything that could escape the run directory."""
    if not _SAFE.match(name) or name in {".", ".."}:
        raise UsageError(f"{what} '{name}' may use only letters, digits, '.', '_' and '-'")
    return name


def new_run_id() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{secrets.token_hex(3)}"


LAUNCH_PREFIX = "launch-"


@dataclass(frozen=True)
class RunDir:
    root: Path
    launch: int = 1  # which launch of each server the server and bench paths below are for

    def for_launch(self, launch: int) -> RunDir:
        """The same run directory, its server and bench paths for launch ``launch`` (1-based)."""
        if launch < 1:
            raise UsageError(f"launch numbers start at 1, not {launch}")
        return RunDir(self.root, launch)

    def _launch_part(self, folder: Path) -> Path:
        return folder if self.launch == 1 else folder / f"{LAUNCH_PREFIX}{self.launch}"

    # --- top level -------------------------------------------------------------------------
    @property
    def plan_yaml(self) -> Path:
        return self.root / "plan.yaml"

    @property
    def env_json(self) -> Path:
        return self.root / "env.json"

    @property
    def summary_json(self) -> Path:
        return self.root / "summary.json"

    @property
    def report_md(self) -> Path:
        return self.root / "report.md"

    @property
    def phases_json(self) -> Path:
        return self.root / "phases.json"

    @property
    def signer_json(self) -> Path:
        return self.root / SIGNER_NAME

    @property
    def plots_dir(self) -> Path:
        return self.root / "plots"

    # --- servers ---------------------------------------------------------------------------
    def server_dir(self, server: str) -> Path:
        return self._launch_part(self.root / "servers" / safe_name(server, "server name"))

    def server_record(self, server: str) -> Path:
        return self.server_dir(server) / "server.json"

    def server_log(self, server: str) -> Path:
        return self.server_dir(server) / "server.log"

    def metrics_snapshot(self, server: str, point_id: str, when: str) -> Path:
        return self.server_dir(server) / f"metrics-{safe_name(point_id, 'point id')}-{when}.prom"

    # --- bench -----------------------------------------------------------------------------
    def bench_dir(self, server: str) -> Path:
        return self._launch_part(self.root / "bench" / safe_name(server, "server name"))

    def bench_rows(self, server: str, point_id: str) -> Path:
        return self.bench_dir(server) / f"{safe_name(point_id, 'point id')}.parquet"

    def bench_point(self, server: str, point_id: str) -> Path:
        return self.bench_dir(server) / f"{safe_name(point_id, 'point id')}.json"

    def bench_attempt(self, server: str, point_id: str, attempt: int) -> tuple[Path, Path]:
        """(record, rows) of an earlier attempt of a re-measured point, kept beside its final files."""
        stem = f"{safe_name(point_id, 'point id')}-{attempt}"
        folder = self.bench_dir(server) / ATTEMPTS_DIR
        return folder / f"{stem}.json", folder / f"{stem}.parquet"

    def bench_point_complete(self, server: str, point_id: str) -> bool:
        """Complete = both files present (each is written atomically; the record last)."""
        return self.bench_rows(server, point_id).is_file() and self.bench_point(server, point_id).is_file()

    # --- evals -----------------------------------------------------------------------------
    def eval_dir(self, server: str, task: str) -> Path:
        return self.root / "evals" / safe_name(server, "server name") / safe_name(task, "task name")

    def eval_items(self, server: str, task: str) -> Path:
        return self.eval_dir(server, task) / "items.parquet"

    def eval_results(self, server: str, task: str) -> Path:
        return self.eval_dir(server, task) / "results.json"

    def eval_look(self, server: str, task: str, look: int) -> Path:
        return self.eval_dir(server, task) / ".looks" / f"look-{look}.json"

    def eval_complete(self, server: str, task: str) -> bool:
        return self.eval_items(server, task).is_file() and self.eval_results(server, task).is_file()

    # --- numerics and conformance ----------------------------------------------------------
    def numerics_dir(self, server: str) -> Path:
        return self.root / "numerics" / safe_name(server, "server name")

    def numerics_rows(self, server: str, pass_name: str) -> Path:
        return self.numerics_dir(server) / f"{safe_name(pass_name, 'pass name')}.parquet"

    def numerics_record(self, server: str) -> Path:
        return self.numerics_dir(server) / "record.json"

    def numerics_complete(self, server: str) -> bool:
        """Complete = the record present (written after every pass's rows)."""
        return self.numerics_record(server).is_file()

    def conformance_record(self, server: str) -> Path:
        return self.root / "conformance" / f"{safe_name(server, 'server name')}.json"

    # --- discovery (used by summary derivation and verify) ---------------------------------
    def bench_point_ids(self, server: str) -> list[str]:
        folder = self.bench_dir(server)
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.json") if self.bench_rows(server, p.stem).is_file())

    def eval_servers(self) -> list[str]:
        base = self.root / "evals"
        return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []

    def eval_tasks(self, server: str) -> list[str]:
        base = self.root / "evals" / safe_name(server, "server name")
        return (
            sorted(p.name for p in base.iterdir() if p.is_dir() and self.eval_complete(server, p.name))
            if base.is_dir()
            else []
        )


def require_run_dir(root: Path) -> None:
    """Refuse what is not a run directory, naming what it got and the command that takes it."""
    if root.name.endswith(".tar.gz") and not root.is_dir():
        raise UsageError(
            f"{root} is a bundle, not a run directory: `byog verify {root}` checks it, `byog report {root}` renders it"
        )
    if not root.exists():
        raise UsageError(
            f"run directory {root} does not exist; `byog run PLAN` makes one (ls {root.parent} lists runs)"
        )
    if not (root / "plan.yaml").is_file():
        raise UsageError(f"{root} is not a byog run directory (no plan.yaml); `byog run PLAN` makes one")
