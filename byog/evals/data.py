"""Where each task's data comes from, and the hashes that say exactly which data it was.

Order of preference for a task's rows:
1. ``local``: a local copy under the data dir (``--data-dir``, ``BYOG_DATA_DIR``, or the copy
   shipped inside byog: ``byog/datasets``), e.g. GSM8K and AIME25;
2. ``hub-cache``: files ``byog data pull`` saved earlier under ``<hub data dir>/hub/<owner>__<name>/<revision>/``
   (the data dir when one is given, else ``~/.cache/byog/datasets``);
3. ``hub``: the Hugging Face hub at the pinned revision (not when offline: ``HF_HUB_OFFLINE=1``
   or ``HF_DATASETS_OFFLINE=1``); a gated dataset uses the user's token (``HF_TOKEN``);
4. ``fixture``: byog's small, byog-written rows in the dataset's exact schema (GPQA, MRCR),
   labelled as fixtures everywhere they show up.

Every run records the source, dataset id, revision, the sha256 of every data file and of every
item it used (``item_sha256``: sha256 of the row's canonical JSON).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from byog.core.errors import EnvironmentProblem, UsageError
from byog.core.io import row_json, row_sha256, sha256_file
from byog.core.settings import DATA_DIR_ENV, PACKAGED_DATASETS, hub_data_dir
from byog.evals.mrcr_tokens import cache_o200k_base
from byog.plans.tasks import TaskSpec

FIXTURES_DIR = Path(__file__).parent / "fixtures"
SourceKind = Literal["local", "hub", "hub-cache", "fixture", "generated"]


def hub_offline() -> bool:
    return any(
        os.environ.get(var, "").lower() in {"1", "true", "yes", "on"}
        for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


canonical_json = row_json
item_sha256 = row_sha256


@dataclass(frozen=True)
class DataSource:
    kind: SourceKind
    dataset_id: str
    revision: str | None
    config: str | None
    files: dict[str, list[Path]] = field(default_factory=dict)  # split -> files (empty for kind "hub")
    label: str = ""
    note: str = ""

    def file_sha256(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for split, paths in sorted(self.files.items()):
            for path in paths:
                key = split if len(paths) == 1 else f"{split}/{path.name}"
                out[key] = sha256_file(path)
        return out

    def record(self) -> dict[str, Any]:
        """DataRecord fields (byog.schemas.evals)."""
        return {
            "source": self.kind,
            "dataset_id": self.dataset_id,
            "revision": self.revision,
            "config": self.config,
            "files": {split: ",".join(p.name for p in paths) for split, paths in sorted(self.files.items())},
            "file_sha256": self.file_sha256(),
            "label": self.label,
            "note": self.note,
        }


def hub_cache_dir(data_dir: Path, task: TaskSpec) -> Path:
    owner_name = task.dataset.hub_id.replace("/", "__")
    return data_dir / "hub" / owner_name / (task.dataset.revision or "main")


def _hub_cached_files(data_dir: Path, task: TaskSpec) -> dict[str, list[Path]] | None:
    root = hub_cache_dir(data_dir, task)
    if not task.dataset.hub_files or not root.is_dir():
        return None
    found: dict[str, list[Path]] = {}
    for split, pattern in task.dataset.hub_files.items():
        paths = sorted(root.glob(pattern))
        if not paths:
            return None
        found[split] = paths
    return found


def resolve_source(task: TaskSpec, data_dir: Path | None) -> DataSource:
    """Pick the task's data (see the module docstring for the order)."""
    ref = task.dataset
    if task.name == "mrcr_generated":
        return DataSource(
            "generated", ref.hub_id, None, None, label="generated (byog MRCR-format rows), not MRCR v2", note=ref.note
        )
    if ref.generated:
        files = {split: [PACKAGED_DATASETS / rel] for split, rel in ref.splits.items()}
        return DataSource(
            "generated",
            ref.hub_id,
            None,
            None,
            files,
            label=f"generated ({ref.hub_id}), not a published benchmark",
            note=ref.note,
        )
    if data_dir is not None and ref.splits:
        local = {split: [data_dir / rel] for split, rel in ref.splits.items()}
        if all(path.is_file() for paths in local.values() for path in paths):
            return DataSource(
                "local", ref.hub_id, ref.revision, ref.config, local, label=f"{ref.hub_id} (local copy)", note=ref.note
            )
    for folder in dict.fromkeys(d for d in (data_dir, hub_data_dir()) if d is not None):
        cached = _hub_cached_files(folder, task)
        if cached is not None:
            label = "MRCR v2" if task.runner == "mrcr" else ref.hub_id
            return DataSource(
                "hub-cache",
                ref.hub_id,
                ref.revision,
                ref.config,
                cached,
                label=label,
                note="pulled earlier by `byog data pull`",
            )
    if not hub_offline():
        return DataSource("hub", ref.hub_id, ref.revision, ref.config, label=ref.hub_id, note=ref.note)
    if ref.fixture:
        path = FIXTURES_DIR / ref.fixture
        split = next(iter(ref.hub_files), "train")
        return DataSource(
            "fixture",
            f"byog-fixture:{ref.fixture}",
            None,
            None,
            {split: [path]},
            label=f"fixture (byog-written rows in {ref.hub_id}'s schema), not {ref.hub_id}",
            note=f"offline and no pulled copy of {ref.hub_id}: run `byog data pull --tasks {task.name}` where the hub "
            "is reachable",
        )
    raise EnvironmentProblem(
        f"no local data for task '{task.name}' ({ref.hub_id}) and the hub is offline: pass --data-dir "
        f"or set {DATA_DIR_ENV} to a folder holding {', '.join(ref.splits.values()) or 'a pulled copy'}"
    )


# --- reading rows ------------------------------------------------------------------------------


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a .jsonl, .csv or .parquet file, in file order."""
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".json"}:
        with path.open(encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    if suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    raise UsageError(f"cannot read {path}: expected .jsonl, .csv or .parquet")


def read_split(source: DataSource, split: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in source.files.get(split, []):
        rows.extend(read_rows(path))
    return rows


def builder_for(paths: Iterable[Path]) -> str:
    """The `datasets` packaged builder for these files: json, csv or parquet."""
    suffixes = {p.suffix.lower() for p in paths}
    if suffixes <= {".jsonl", ".json"}:
        return "json"
    if suffixes == {".csv"}:
        return "csv"
    if suffixes == {".parquet"}:
        return "parquet"
    raise UsageError(f"mixed or unknown data file types: {sorted(suffixes)}")


# --- byog data pull ----------------------------------------------------------------------------


def _pull_failure(err: Exception) -> str:
    name, text = type(err).__name__, str(err)
    if "Gated" in name or "401" in text or "403" in text:
        return "access denied (a gated dataset: accept its terms on the hub and set HF_TOKEN)"
    if "Revision" in name:
        return "that revision does not exist on the hub"
    return f"the Hugging Face hub could not be reached ({name})"


def pull(tasks: list[TaskSpec], data_dir: Path, token: str | None = None) -> list[dict[str, Any]]:
    """Download each task's hub files at the pinned revision into ``<data dir>/hub/...``.

    Also caches tiktoken's o200k_base (MRCR's token counter) under ``<data dir>/tiktoken``.
    Raises EnvironmentProblem (exit 3) with one sentence when the hub cannot be reached.
    """
    if hub_offline():
        raise EnvironmentProblem(
            "byog data pull needs the Hugging Face hub, but HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set; unset it on a "
            "machine with network"
        )
    try:
        from huggingface_hub import snapshot_download
    except ImportError as err:  # pragma: no cover - datasets depends on it
        raise EnvironmentProblem("byog data pull needs huggingface_hub: pip install 'byog[evals]'") from err
    token = token or os.environ.get("HF_TOKEN")
    pulled: list[dict[str, Any]] = []
    for task in tasks:
        ref = task.dataset
        if not ref.hub_files:
            continue
        target = hub_cache_dir(data_dir, task)
        try:
            snapshot_download(
                repo_id=ref.hub_id,
                repo_type="dataset",
                revision=ref.revision,
                allow_patterns=list(ref.hub_files.values()),
                local_dir=str(target),
                token=token,
            )
        except Exception as err:  # network, auth (gated), missing revision: all one sentence
            raise EnvironmentProblem(
                f"could not pull {ref.hub_id}@{ref.revision or 'main'}: {_pull_failure(err)}; "
                "run `byog data pull` where the hub is reachable and pass that folder as --data-dir"
            ) from None
        files = _hub_cached_files(data_dir, task) or {}
        pulled.append(
            {
                "task": task.name,
                "dataset_id": ref.hub_id,
                "revision": ref.revision,
                "dir": str(target),
                "files": {split: [str(p) for p in paths] for split, paths in files.items()},
            }
        )
    if any(task.runner == "mrcr" for task in tasks):
        cache_o200k_base(data_dir)
    return pulled
