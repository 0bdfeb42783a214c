"""Shared by the bundles/security tests: small synthetic bundles (their keys: tests/support/keys.py).

Bundles are built from ``tests.support.synthetic`` (real file formats, made-up numbers); their
summary is derived by the real ``byog.analysis.summary.derive_summary``.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from byog.bundles.finalize import Packed, seal_and_pack
from byog.bundles.manifest import build_statement, statement_bytes
from byog.bundles.pack import tar_gz
from byog.bundles.sign import SigningKey, sign_bytes
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME, RunDir
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
