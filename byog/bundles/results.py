"""``byog.open``: the records of a run directory or a verified bundle as pandas DataFrames.

A bundle is hostile input, so it is opened the way ``byog items`` and ``byog report`` open one: copied
to a private file (the bytes checked are the bytes read), verified by ``verify_bundle`` with the
caller's trust inputs (allowed signers, ``allow_unsigned``, the ``--for`` subject), and only once
every check passed unpacked into the cache, ``<cache>/bundles/<sha256 of the bundle file>/``
(``byog.core.settings.bundle_cache_dir``), through the same vetted extraction verify uses, into a
private folder renamed into place when complete. A bundle that does not verify is refused in one
sentence and nothing of it is written. The cache saves the unpacking, never the verification: a
cached bundle is verified again on every open, since the trust inputs may differ.

A run directory is the caller's own and is read as it is. docs/analysis.md documents the API and
every column (``byog.analysis.frame_columns``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from byog.analysis.frame_columns import TABLES
from byog.analysis.frames import RunTables, frame
from byog.bundles.unpack import Limits, scan_bundle
from byog.bundles.verify import verify_bundle
from byog.core.errors import CheckFailed, UsageError
from byog.core.io import sha256_file
from byog.core.paths import RunDir
from byog.core.safe_text import one_line
from byog.core.settings import bundle_cache_dir
from byog.schemas.manifest import BundleSubject

if TYPE_CHECKING:
    import pandas as pd

PathLike: TypeAlias = "str | os.PathLike[str]"
Targets: TypeAlias = "PathLike | Sequence[PathLike] | Mapping[str, PathLike]"


def _unpack(bundle: Path, target: Path, *, legacy_ok: bool) -> None:
    """Extract a verified bundle into ``target``: into a private sibling first, renamed when complete."""
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name[:16]}-", dir=target.parent))
    try:
        scan_bundle(bundle, Limits(), partial, legacy_ok=legacy_ok)
        try:
            partial.rename(target)
        except OSError:
            if not target.is_dir():  # not another open that unpacked the same bundle meanwhile
                raise
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)


def verified_run_dir(
    bundle: Path,
    *,
    allowed_signers: Path | None = None,
    allow_unsigned: bool = False,
    subject_for: str | BundleSubject | None = None,
) -> RunDir:
    """The cached unpacking of ``bundle``, once ``verify_bundle`` passed it; CheckFailed (one sentence) otherwise."""
    with tempfile.TemporaryDirectory(prefix="byog-open-") as private:
        copy = Path(private) / "bundle.tar.gz"
        shutil.copyfile(bundle, copy)
        report = verify_bundle(
            copy, allowed_signers=allowed_signers, allow_unsigned=allow_unsigned, subject_for=subject_for
        )
        if not report.verified:
            first = report.failures[0] if report.failures else "no check ran"
            raise CheckFailed(f"{one_line(bundle, 200)} does not verify, so it is not opened: {one_line(first, 300)}")
        target = bundle_cache_dir() / sha256_file(copy)
        if not target.is_dir():
            _unpack(copy, target, legacy_ok=allow_unsigned)
    return RunDir(target)


def _stem(path: Path) -> str:
    return path.name.removesuffix(".tar.gz").removesuffix(".tgz") or path.name


def _named(targets: Targets) -> list[tuple[str, Path]]:
    """(source name, path) of each target: a mapping's keys, else the file or folder names, made unique."""
    if isinstance(targets, Mapping):
        return [(str(name), Path(path)) for name, path in targets.items()]
    paths = [Path(targets)] if isinstance(targets, str | os.PathLike) else [Path(p) for p in targets]
    named: list[tuple[str, Path]] = []
    seen: dict[str, int] = {}
    for path in paths:
        name = _stem(path.resolve())
        seen[name] = seen.get(name, 0) + 1
        named.append((name if seen[name] == 1 else f"{name}#{seen[name]}", path))
    return named


class Results:
    """The tables of one or more runs or bundles, concatenated; ``source`` names each row's origin.

    Every table is a pandas DataFrame built on first access (docs/analysis.md lists the columns).
    """

    def __init__(self, runs: Sequence[RunTables]) -> None:
        self.runs = list(runs)
        self._built: dict[str, pd.DataFrame] = {}

    @property
    def sources(self) -> dict[str, Path]:
        """source name -> the folder its records were read from (a bundle's: its cache folder)."""
        return {run.source: run.run_dir.root for run in self.runs}

    def table(self, name: str) -> pd.DataFrame:
        """One table by name (``TABLES``); a copy-free view of the cached frame."""
        if name not in TABLES:
            raise UsageError(f"no table '{one_line(name, 40)}' (tables: {', '.join(TABLES)})")
        if name not in self._built:
            import pandas as pd

            parts = [getattr(run, name)() for run in self.runs]
            self._built[name] = frame(name, pd.concat(parts, ignore_index=True)) if len(parts) > 1 else parts[0]
        return self._built[name]

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table, by name, in the documented order."""
        return {name: self.table(name) for name in TABLES}

    @property
    def requests(self) -> pd.DataFrame:
        """One row per request of every point, server and launch, warm-up included."""
        return self.table("requests")

    @property
    def points(self) -> pd.DataFrame:
        """One row per point of every server and launch: validity, counters, the derived metrics."""
        return self.table("points")

    @property
    def comparisons(self) -> pd.DataFrame:
        """One row per candidate/baseline pair, point and headline metric: ratio, CI and method."""
        return self.table("comparisons")

    @property
    def items(self) -> pd.DataFrame:
        """One row per eval item a pair's two servers both scored, both scores side by side."""
        return self.table("items")

    @property
    def verdicts(self) -> pd.DataFrame:
        """One row per eval verdict."""
        return self.table("verdicts")

    @property
    def servers(self) -> pd.DataFrame:
        """One row per launch of every server: what it ran (identity) and how it was launched."""
        return self.table("servers")

    def __repr__(self) -> str:
        return f"<byog.Results of {', '.join(self.sources) or 'nothing'}>"


def open_results(
    targets: Targets,
    *,
    allowed_signers: PathLike | None = None,
    allow_unsigned: bool = False,
    subject_for: str | BundleSubject | None = None,
) -> Results:
    """Open run directories and bundles (a path, a list of them, or a mapping of source name -> path)
    for analysis; every bundle is verified first, as ``byog verify`` would with the same trust inputs."""
    named = _named(targets)
    if not named:
        raise UsageError("nothing to open: give a run directory or a bundle")
    signers = Path(allowed_signers) if allowed_signers is not None else None
    runs = []
    for name, path in named:
        if path.is_dir():
            if not RunDir(path).plan_yaml.is_file():
                raise UsageError(f"{path} is not a run directory (it has no plan.yaml)")
            run_dir = RunDir(path)
        elif path.is_file():
            run_dir = verified_run_dir(
                path, allowed_signers=signers, allow_unsigned=allow_unsigned, subject_for=subject_for
            )
        else:
            raise UsageError(f"{path} is neither a run directory nor a bundle file")
        runs.append(RunTables(run_dir, name))
    return Results(runs)
