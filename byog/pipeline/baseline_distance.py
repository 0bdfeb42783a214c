"""After a run's servers ran: for each pair whose candidate's vLLM is installed from a git checkout (an
editable or directory install: the identity probe's ``install.source_dir``), how far the baseline is
from the candidate's merge base with vLLM's main, recorded in the candidate's server record.

Asked where the run ran (the checkout is here; a maintainer's machine has neither), so it is a raw
record, signed with the rest. The baseline's commit is its recorded one, else its release tag's commit
in the checkout; what the checkout cannot answer is "unknown" (``byog.images.merge_base``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from byog.core.paths import RunDir
from byog.images.merge_base import commits_between, distance_line, merge_base, release_commit
from byog.runtimes.record import write_server_record
from byog.schemas.plan import Plan
from byog.schemas.server import BaselineDistance, ServerRecord


def _read(rd: RunDir, server: str) -> ServerRecord | None:
    path = rd.server_record(server)
    return ServerRecord.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None


def source_dir(record: ServerRecord) -> Path | None:
    """The candidate's vLLM source checkout, where its identity names one that exists here."""
    vllm = record.identity.vllm if record.identity is not None else None
    install: Any = getattr(vllm, "install", None)
    found = install.get("source_dir") if isinstance(install, dict) else getattr(install, "source_dir", None)
    return Path(found) if isinstance(found, str) and Path(found).is_dir() else None


def _baseline_commit(record: ServerRecord, checkout: Path) -> tuple[str | None, str]:
    """(the baseline's commit, how the line names it): its recorded commit, else its release tag's commit."""
    vllm = record.identity.vllm if record.identity is not None else None
    version = vllm.version if vllm is not None else None
    named = f"vllm {version}" if version else f"'{record.name}' (version unknown)"
    if vllm is not None and vllm.commit:
        return vllm.commit, f"{named} @ {vllm.commit[:7]}"
    if version:
        return release_commit(checkout, version.split("+", 1)[0]), named
    return None, named


def record_baseline_distances(plan: Plan, rd: RunDir) -> list[str]:
    """Write each pair's distance into its candidate's server record; the lines, 'candidate vs baseline: ...'."""
    said: list[str] = []
    for candidate, baseline in plan.comparisons:
        cand, base = _read(rd, candidate), _read(rd, baseline)
        checkout = source_dir(cand) if cand is not None else None
        if cand is None or base is None or checkout is None:
            continue
        found = merge_base(checkout)
        commit, named = _baseline_commit(base, checkout)
        behind = commits_between(checkout, commit, found.commit) if commit and found.commit else None
        line = distance_line(named, commit, found, behind)
        entry = BaselineDistance(
            baseline=baseline, merge_base=found.commit, baseline_commit=commit, behind=behind, line=line
        )
        kept = [d for d in cand.baseline_distance if d.baseline != baseline]
        updated = cand.model_copy(update={"baseline_distance": [*kept, entry]})
        write_server_record(rd.server_record(candidate), updated)
        said.append(f"{candidate} vs {baseline}: {line}")
    return said
