"""The discordant items of a run directory or of a bundle (``byog items``).

A bundle is hostile input, so it is read the way ``byog report`` reads one: copied to a private
file (so the bytes checked are the bytes read), verified (signer, hashes, the summary recomputed
by verify's limited child), and only then extracted and its items.parquet read. A bundle that does
not verify shows nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from byog.analysis.discordant import DiscordantItems, discordant_items
from byog.analysis.summary import plan_of
from byog.bundles.unpack import Extracted
from byog.bundles.verify import verify_bundle
from byog.core.errors import CheckFailed, UsageError
from byog.core.paths import RunDir
from byog.core.safe_text import one_line


def _pairs_of(run_dir: RunDir, task: str) -> list[tuple[str, str]]:
    plan = plan_of(run_dir)
    return [(c, b) for c, b in plan.comparisons if run_dir.eval_complete(c, task) and run_dir.eval_complete(b, task)]


def _read(run_dir: RunDir, candidate: str | None, task: str | None) -> list[DiscordantItems]:
    tasks = sorted({t for server in run_dir.eval_servers() for t in run_dir.eval_tasks(server)})
    if task is not None and task not in tasks:
        shown = ", ".join(one_line(t, 40) for t in tasks) or "none"
        raise UsageError(f"no eval of task '{one_line(task, 60)}' in {run_dir.root} (tasks: {shown})")
    found = []
    for name in [task] if task is not None else tasks:
        for cand, base in _pairs_of(run_dir, name):
            if candidate is None or cand == candidate:
                found.append(discordant_items(run_dir, name, cand, base))
    if candidate is not None and not found:
        raise UsageError(
            f"no pair with candidate '{one_line(candidate, 60)}' ran "
            + (f"task '{one_line(task, 60)}'" if task else "an eval")
            + f" in {run_dir.root}"
        )
    return found


def load_discordant(
    target: Path,
    *,
    candidate: str | None = None,
    task: str | None = None,
    allowed_signers: Path | None = None,
    allow_unsigned: bool = False,
) -> list[DiscordantItems]:
    """Per (task, pair) of a run directory or a verified bundle: the items the two servers scored differently."""
    if target.is_dir():
        return _read(RunDir(target), candidate, task)
    if not target.is_file():
        raise UsageError(f"{target} is neither a run directory nor a bundle file")
    with tempfile.TemporaryDirectory(prefix="byog-items-") as private:
        copy = Path(private) / "bundle.tar.gz"
        shutil.copyfile(target, copy)
        report = verify_bundle(copy, allowed_signers=allowed_signers, allow_unsigned=allow_unsigned)
        if not report.verified:
            first = report.failures[0] if report.failures else "no check ran"
            raise CheckFailed(f"{target} does not verify, so its items are not shown: {one_line(first, 300)}")
        with Extracted(copy) as extracted:
            assert extracted.root is not None
            return _read(RunDir(extracted.root), candidate, task)
