"""Shared by the bundles/security tests: small synthetic bundles (their keys: tests/support/keys.py).

Bundles are built from ``tests.support.synthetic`` (real file formats, made-up numbers); their
summary is derived by the real ``byog.analysis.summary.derive_summary``.
"""

from __future__ import annotations

from pathlib import Path

from byog.bundles.finalize import Packed, seal_and_pack
from byog.bundles.sign import SigningKey
from byog.core.paths import RunDir
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
