"""Shared by the bundles/security tests: small synthetic bundles (their keys: tests/support/keys.py).

Bundles are built from ``tests.support.synthetic`` (real file formats, made-up numbers); their
summary is derived by the real ``byog.analysis.summary.derive_summary``.
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from byog.analysis.summary import derive_summary
from byog.bundles.finalize import Packed, seal_and_pack
from byog.bundles.manifest import build_statement, statement_bytes
from byog.bundles.pack import tar_gz
from byog.bundles.sign import SigningKey, sign_bytes
from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME, RunDir
from byog.report.markdown import render_report
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import SyntheticSpec, make_run_dir

TINY = SyntheticSpec(batch_sizes=(1,), isl=4, osl=8, warmup_waves=0, waves=2, eval_items=4, log_lines=3)


def build_bundle(
    folder: Path, key: SigningKey | None, spec: SyntheticSpec = TINY, *, plots: bool = False
) -> tuple[RunDir, Packed]:
    run_dir = make_run_dir(folder / "run", spec)
    if not plots:
        run_dir.plots_dir.mkdir(exist_ok=True)  # present and empty: pack draws nothing
    packed = seal_and_pack(run_dir, folder / "bundle.tar.gz", sign=key is not None, key=key, plots=plots or None)
    return run_dir, packed


def repacked(bundle: Path, changes: dict[str, bytes], key: SigningKey, out: Path) -> Path:
    """The bundle with some files replaced, its manifest built anew (declaring report.md's format)
    and signed by ``key``: what a contributor's own tools can make, so only the checks can object."""
    with tarfile.open(bundle, "r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    files.pop(MANIFEST_NAME)
    files.pop(SIGNATURE_NAME)
    files.update(changes)
    manifest = statement_bytes(build_statement(files))
    out.write_bytes(tar_gz({**files, MANIFEST_NAME: manifest, SIGNATURE_NAME: sign_bytes(manifest, key)}))
    return out


def pack_with_summary(
    tmp_path: Path, run_dir: RunDir, edit: Callable[[dict[str, Any]], None] | None = None
) -> tuple[Path, Path]:
    """(bundle, allowed signers) of ``run_dir`` with its derived summary and report, the summary then
    passed to ``edit`` (a forger's change to the shipped summary.json), signed by alice."""
    summary = derive_summary(run_dir)
    atomic_write_text(run_dir.report_md, render_report(run_dir, summary))
    document = summary.to_json()
    if edit is not None:
        edit(document)
    atomic_write_json(run_dir.summary_json, document)
    key, public = make_key(tmp_path, "alice")
    allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", public)])
    return seal_and_pack(run_dir, tmp_path / "b.tar.gz", key=key).bundle, allowed


def result(report: Any, name: str) -> Any:
    """The named check's result in a verify report."""
    return next(r for r in report.results if r.name == name)
