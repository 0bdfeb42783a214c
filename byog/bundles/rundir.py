"""The run directory: one place that knows where every file of a run lives.

    runs/<id>/
      plan.yaml  env.json
      servers/<server>/{server.json, server.log, metrics-<point>-{before,after}.prom}
      bench/<server>/<point>.parquet   raw per-request rows (source of truth)
      bench/<server>/<point>.json      the point's record: spec, counters, validity (raw)
      evals/<server>/<task>/{items.parquet, results.json}
      summary.json  report.md  plots/*.png     (derived from the raw files above)

A file exists only once complete (atomic writes), so "complete" is "present".
"""

from __future__ import annotations

import datetime as _dt
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from byog.errors import UsageError

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def safe_name(name: str, what: str) -> str:
    """Names become path components: refuse anything that could escape the run directory."""
    if not _SAFE.match(name) or name in {".", ".."}:
        raise UsageError(f"{what} '{name}' may use only letters, digits, '.', '_' and '-'")
    return name


def new_run_id() -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class RunDir:
    root: Path

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
    def plots_dir(self) -> Path:
        return self.root / "plots"

    # --- servers ---------------------------------------------------------------------------
    def server_dir(self, server: str) -> Path:
        return self.root / "servers" / safe_name(server, "server name")

    def server_record(self, server: str) -> Path:
        return self.server_dir(server) / "server.json"

    def server_log(self, server: str) -> Path:
        return self.server_dir(server) / "server.log"

    def metrics_snapshot(self, server: str, point_id: str, when: str) -> Path:
        return self.server_dir(server) / f"metrics-{safe_name(point_id, 'point id')}-{when}.prom"

    # --- bench -----------------------------------------------------------------------------
    def bench_dir(self, server: str) -> Path:
        return self.root / "bench" / safe_name(server, "server name")

    def bench_rows(self, server: str, point_id: str) -> Path:
        return self.bench_dir(server) / f"{safe_name(point_id, 'point id')}.parquet"

    def bench_point(self, server: str, point_id: str) -> Path:
        return self.bench_dir(server) / f"{safe_name(point_id, 'point id')}.json"

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

    def eval_complete(self, server: str, task: str) -> bool:
        return self.eval_items(server, task).is_file() and self.eval_results(server, task).is_file()

    # --- discovery (used by summary derivation and verify) ---------------------------------
    def bench_servers(self) -> list[str]:
        base = self.root / "bench"
        return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []

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
        return sorted(p.name for p in base.iterdir() if p.is_dir() and self.eval_complete(server, p.name)) if base.is_dir() else []
