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


def _read(run_dir: RunDir, candidate: str | None, task: str | None, label: Path) -> list[DiscordantItems]:
    """``label``: the run directory or bundle as the user named it (a bundle's extraction folder is gone
    by the time they read the message)."""
    tasks = sorted({t for server in run_dir.eval_servers() for t in run_dir.eval_tasks(server)})
    if not tasks:
        raise UsageError(f"{label} holds no eval: no eval task ran, so there are no items to compare")
    if task is not None and task not in tasks:
        shown = ", ".join(one_line(t, 40) for t in tasks)
        raise UsageError(f"no eval of task '{one_line(task, 60)}' in {label} (tasks: {shown})")
    found = []
    pairs: dict[tuple[str, str], None] = {}
    for name in [task] if task is not None else tasks:
        for cand, base in _pairs_of(run_dir, name):
            pairs[(cand, base)] = None
            if candidate is None or cand == candidate:
                found.append(discordant_items(run_dir, name, cand, base))
    if candidate is not None and not found:
        valid = ", ".join(f"{one_line(c, 60)} (vs {one_line(b, 60)})" for c, b in pairs) or "none"
        raise UsageError(
            f"--pair {one_line(candidate, 60)}: no pair with that candidate ran "
            + (f"task '{one_line(task, 60)}'" if task else "an eval")
            + f" in {label}; the candidates that did: {valid}"
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
        return _read(RunDir(target), candidate, task, target)
    if not target.is_file():
        raise UsageError(f"{target} is neither a run directory nor a bundle file")
    with tempfile.TemporaryDirectory(prefix="byog-items-") as private:
        copy = Path(private) / "bundle.tar.gz"
        shutil.copyfile(target, copy)
        report = verify_bundle(copy, allowed_signers=allowed_signers, allow_unsigned=allow_unsigned)
        if not report.verified:
            failed = "; ".join(one_line(f, 300) for f in report.failures) or "no check ran"
            raise CheckFailed(f"{target} does not verify, so its items are not shown: {failed}")
        with Extracted(copy) as extracted:
            assert extracted.root is not None
            return _read(RunDir(extracted.root), candidate, task, target)
