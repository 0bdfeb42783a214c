"""Shared by the bundles/security tests: real OpenSSH keys and small synthetic bundles.

Bundles are built from ``byog.bundles.synthetic`` (real file formats, made-up numbers). The
summary is derived by the real ``byog.bundles.summary.derive_summary`` once the evals summary
exists; until then by the real bench summary plus a stand-in for the eval part.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

from byog.bundles.finalize import Packed, seal_and_pack
from byog.bundles.rundir import RunDir
from byog.bundles.sign import SigningKey
from byog.bundles.synthetic import SyntheticSpec, make_run_dir

TINY = SyntheticSpec(batch_sizes=(1,), isl=4, osl=8, warmup_waves=0, waves=2, eval_items=4, log_lines=3)


def derive(run_dir: RunDir) -> dict[str, Any]:
    if importlib.util.find_spec("byog.evals.summary") is not None:
        from byog.bundles.summary import derive_summary

        return derive_summary(run_dir)
    import pyarrow.parquet as pq

    from byog.bench.summary import summarize_bench
    from byog.plans.load import parse_plan

    plan = parse_plan(run_dir.plan_yaml.read_text(encoding="utf-8"), str(run_dir.plan_yaml))
    scores = []
    for server in run_dir.eval_servers():
        for task in run_dir.eval_tasks(server):
            values = pq.read_table(run_dir.eval_items(server, task)).column("score").to_pylist()
            scores.append({"server": server, "task": task, "n_items": len(values), "passes": 1,
                           "score": 100.0 * sum(values) / len(values), "stderr": None})
    return {
        "schema_version": 1,
        "plan": {"name": plan.name, "baseline": plan.baseline, "candidates": plan.candidates},
        "bench": summarize_bench(run_dir, plan),
        "evals": {"scores": scores, "verdicts": []},
    }


def make_key(folder: Path, name: str) -> tuple[SigningKey, str]:
    """A fresh ed25519 key (no passphrase) and its 'type base64' public key."""
    path = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)], check=True)
    public = " ".join(Path(f"{path}.pub").read_text().split()[:2])
    return SigningKey(path, "test"), public


def allowed_signers(path: Path, entries: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f'{who} namespaces="byog-bundle@v1" {key}\n' for who, key in entries))
    return path


def build_bundle(folder: Path, key: SigningKey | None, spec: SyntheticSpec = TINY, *, plots: bool = False) -> tuple[RunDir, Packed]:
    run_dir = make_run_dir(folder / "run", spec, derive=derive)
    if not plots:
        run_dir.plots_dir.mkdir(exist_ok=True)  # present and empty: pack draws nothing
    packed = seal_and_pack(run_dir, folder / "bundle.tar.gz", sign=key is not None, key=key, plots=plots or None)
    return run_dir, packed
