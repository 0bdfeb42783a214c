"""A server's recorded identity, held against itself: where two sources name the same fact, they agree.

server.json's ``identity`` (``byog.runtimes.identity_probe``, read where the server ran) can name
one fact twice, and a hostile bundle can make the two disagree while each looks fine alone:

- the commit and ``commit_source``: a commit comes from a named source (``vllm/_version.py``,
  ``direct_url.json`` or the version's ``+g<sha>``); a commit with no source or a source with no
  commit, an unknown source, or a version whose ``+g<sha>`` names another commit, contradicts;
- the installed wheel's sha256 (pip's ``direct_url.json``) and the image's wheel label
  (``byog.schemas.image_labels``), and likewise the commit and the label's commit;
- every node of a multi-node server and rank 0 (the record's ``identity``): vLLM version, commit,
  wheel and RECORD hashes; a node with no identity where rank 0 has one cannot be said to run
  the same build.

The format of a commit (7-40 lowercase hex) is the schema's (``byog.schemas.commits``); verify's
``identity`` check fails on any finding here, naming both sources.
"""

from __future__ import annotations

import re

from byog.schemas.commits import same_commit
from byog.schemas.image_labels import IMAGE_LABEL_WHEEL_COMMIT, IMAGE_LABEL_WHEEL_SHA256
from byog.schemas.server import ServerIdentity, ServerRecord, VllmIdentity

COMMIT_SOURCES = ("vllm/_version.py", "direct_url.json", "local version")  # identity_probe's names
_LOCAL_COMMIT = re.compile(r"(?:^|[+.])g([0-9a-f]{7,40})(?:$|\.)")  # identity_probe's reading of +g<sha>
# What every node must share with rank 0, and how a sentence names it.
_SHARED = (("version", "vLLM version"), ("commit", "commit"), ("wheel_sha256", "wheel"), ("record_sha256", "RECORD"))


def _commit_findings(where: str, vllm: VllmIdentity) -> list[str]:
    commit, source = vllm.commit, vllm.commit_source
    if commit is not None and source is None:
        return [f"{where} records commit {commit} but no source that named it"]
    if commit is None and source is not None:
        return [f"{where} names commit source {source!r} but no commit"]
    if source is not None and source not in COMMIT_SOURCES:
        return [f"{where} names commit source {source!r}, which is none of {', '.join(COMMIT_SOURCES)}"]
    local = _LOCAL_COMMIT.search((vllm.version or "").partition("+")[2])
    if source == "local version" and local is None:
        return [f"{where} takes commit {commit} from the local version, but version {vllm.version!r} names none"]
    if local is not None and commit is not None and not same_commit(local.group(1), commit):
        return [f"{where} records commit {commit} ({source}) but its version {vllm.version} names g{local.group(1)}"]
    return []


def _label_findings(where: str, identity: ServerIdentity) -> list[str]:
    vllm, labels = identity.vllm, identity.image.labels if identity.image is not None else {}
    if vllm is None:
        return []
    found = []
    label_sha = labels.get(IMAGE_LABEL_WHEEL_SHA256)
    if label_sha is not None and vllm.wheel_sha256 is not None and label_sha.lower() != vllm.wheel_sha256:
        found.append(
            f"{where}: the installed wheel's sha256 {vllm.wheel_sha256} is not the image label "
            f"{IMAGE_LABEL_WHEEL_SHA256}={label_sha}"
        )
    label_commit = labels.get(IMAGE_LABEL_WHEEL_COMMIT)
    if label_commit is not None and not same_commit(label_commit.lower(), vllm.commit):
        found.append(
            f"{where}: the installed vLLM records commit {vllm.commit or '(none)'}, the image label "
            f"{IMAGE_LABEL_WHEEL_COMMIT}={label_commit}"
        )
    return found


def _node_findings(name: str, record: ServerRecord) -> list[str]:
    rank0 = record.identity.vllm if record.identity is not None else None
    if rank0 is None or not record.nodes:
        return []
    found = []
    for node in record.nodes:
        vllm = node.identity.vllm if node.identity is not None else None
        if vllm is None:
            found.append(f"server '{name}' node {node.rank} records no vLLM identity while rank 0 does")
            continue
        for field, label in _SHARED:
            ours, theirs = getattr(vllm, field) or "(none)", getattr(rank0, field) or "(none)"
            if ours != theirs:
                found.append(f"server '{name}' node {node.rank} ran {label} {ours} while rank 0 ran {theirs}")
    return found


def _identities(name: str, record: ServerRecord) -> list[tuple[str, ServerIdentity]]:
    own = [(f"server '{name}'", record.identity)] if record.identity is not None else []
    nodes = [(f"server '{name}' node {n.rank}", n.identity) for n in record.nodes or [] if n.identity is not None]
    return own + nodes


def contradictions(name: str, record: ServerRecord) -> list[str]:
    """Every place ``record``'s identity disagrees with itself, one sentence each naming both sides."""
    found = []
    for where, identity in _identities(name, record):
        if identity.vllm is not None:
            found += _commit_findings(where, identity.vllm)
        found += _label_findings(where, identity)
    return found + _node_findings(name, record)
