"""A server's engine integrity, as a verdict: clean, patched (perhaps under a waiver) or unknown.

The probe (``byog.runtimes.identity_probe.engine_integrity``) records what it found where the
server ran, rank 0 and each node; this module turns a record into one line per place and says
which findings are patches: a file RECORD lists that changed or is gone, a Python file or
extension in the package that RECORD does not list, a start-up hook no distribution's RECORD
installed as is. A policy waiver names a patch by its path and sha256; a missing file, or a hook
recorded without a digest (an environment variable, a plugin), has no digest to waive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from byog.schemas.server import EngineIntegrity, ServerIdentity, ServerRecord

Status = Literal["clean", "patched", "waived", "unknown"]
SHOWN = 3  # patches named in a line


@dataclass(frozen=True)
class Patch:
    what: str  # "modified", "missing", "unlisted", or a hook's kind
    path: str
    sha256: str | None

    @property
    def label(self) -> str:
        return f"{self.what} {self.path}"


@dataclass(frozen=True)
class EngineVerdict:
    where: str  # "candidate", "candidate node 1"
    status: Status
    line: str
    patches: list[Patch] = field(default_factory=list)


def patches(integrity: EngineIntegrity) -> list[Patch]:
    """Every finding that makes an install differ from what its RECORD and its distributions installed."""
    found = [Patch("modified", path, sha) for path, sha in sorted(integrity.modified.items())]
    found += [Patch("missing", path, None) for path in integrity.missing.names]
    found += [Patch("unlisted", path, sha) for path, sha in sorted(integrity.unlisted.items())]
    found += [Patch(hook.kind, hook.path, hook.sha256) for hook in integrity.hooks if hook.owner is None]
    return found


def _waived(patch: Patch, waivers: dict[str, str]) -> bool:
    return patch.sha256 is not None and waivers.get(patch.path) == patch.sha256


def _named(found: list[Patch]) -> str:
    more = f" (+{len(found) - SHOWN} more)" if len(found) > SHOWN else ""
    return "; ".join(p.label for p in found[:SHOWN]) + more


def verdict(where: str, identity: ServerIdentity | None, waivers: dict[str, str]) -> EngineVerdict:
    """One place's verdict; a place that recorded no integrity is unknown."""
    vllm = identity.vllm if identity is not None else None
    integrity = vllm.integrity if vllm is not None else None
    if integrity is None:
        why = (vllm.error if vllm is not None else None) or (identity.error if identity is not None else None)
        return EngineVerdict(where, "unknown", f"{where}: unknown: {why or 'no engine integrity recorded'}")
    if integrity.status == "unknown":
        return EngineVerdict(where, "unknown", f"{where}: unknown: {integrity.reason or 'not checked'}")
    found = patches(integrity)
    if integrity.status == "patched" and not found:
        return EngineVerdict(where, "unknown", f"{where}: unknown: recorded as patched, naming nothing")
    build = f"{vllm.distribution} {vllm.version}" if vllm is not None else "vLLM"
    if not found:
        owned = [h for h in integrity.hooks if h.owner is not None]
        hooks = f"; {len(owned)} start-up hook(s) installed by their distributions" if owned else ""
        return EngineVerdict(
            where, "clean", f"{where}: clean ({build}: {integrity.files_checked} files match RECORD{hooks})"
        )
    open_ = [p for p in found if not _waived(p, waivers)]
    if open_:
        more = max(integrity.modified_count - len(integrity.modified), 0) + max(
            integrity.missing.count - len(integrity.missing.names), 0
        )
        extra = f" ({more} more the record does not name)" if more else ""
        return EngineVerdict(where, "patched", f"{where}: patched: {_named(open_)}{extra}", open_)
    waived = ", ".join(f"{p.path} (sha256 {p.sha256[:12] if p.sha256 else ''})" for p in found[:SHOWN])
    return EngineVerdict(where, "waived", f"{where}: patched: waiver {waived}", found)


def verdicts(name: str, record: ServerRecord, waivers: dict[str, str]) -> list[EngineVerdict]:
    """Rank 0's verdict (or the one server's) and each node's."""
    found = [verdict(name, record.identity, waivers)] if record.identity is not None or not record.nodes else []
    return found + [verdict(f"{name} node {node.rank}", node.identity, waivers) for node in record.nodes or []]
