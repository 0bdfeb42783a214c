"""Seal a run directory into a bundle: collect its files, write the manifest, pack a tar.gz.

The archive is deterministic: regular files only, the manifest, its signature and signer.json
first and then the other names sorted, one plain ustar header each, mtime 0, uid/gid 0, empty
uname/gname, mode 0644, and a gzip header with mtime 0 and no file name, so packing the same
run directory twice gives the same bytes (Ed25519 SSH signatures are deterministic too).

Size budget: GitHub accepts PR attachments up to 25 MB. Server logs are always gzipped
(``server.log`` -> ``server.log.gz``); over budget, raw parquet rows are re-encoded with zstd's
highest level and ``/metrics`` snapshots gzipped, then server logs cut to their first and last
lines; still over budget, packing fails and names the biggest files.
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

from byog.bundles.archive import (
    MAX_NAME,
    UnsafeBundle,
    archive_order,
    bundle_gzip,
    check_name,
    gzip_bytes,
    split_name,
    write_tar,
)
from byog.bundles.manifest import build_statement, statement_bytes
from byog.core.errors import CheckFailed, UsageError
from byog.core.io import atomic_write_bytes
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME, RunDir
from byog.schemas.manifest import BundleSubject
from byog.schemas.tables import recompress

BUNDLE_NAME = "bundle.tar.gz"
BUDGET_BYTES = 25 * 1000 * 1000  # GitHub's PR attachment limit, counted in decimal MB to be safe
LOG_HEAD_LINES = 2000  # over budget, a server log keeps its start-up ...
LOG_TAIL_LINES = 8000  # ... and its end

# Never part of a bundle: the bundle itself, reproductions attached beside it
# (``byog reproduce`` writes <bundle>.reproduction.tar.gz next to the bundle), and temp files of
# interrupted atomic writes.
_EXCLUDED_TOP = {BUNDLE_NAME, MANIFEST_NAME, SIGNATURE_NAME}
_ATTACHED = re.compile(r"^[^/]*\.reproduction[^/]*\.tar\.gz$")


@dataclass
class BundleContents:
    files: dict[str, bytes]  # bundle path -> bytes; manifest and signature not included
    compressed: list[str] = field(default_factory=list)  # paths that were compressed to fit the budget
    subject: BundleSubject | None = None  # what the bundle is for (pack --for), signed in the manifest


def collect_files(run_dir: RunDir, *, exclude: AbstractSet[Path] = frozenset()) -> dict[str, bytes]:
    """Every regular file under the run directory, by '/'-separated relative path."""
    root = run_dir.root
    if not root.is_dir():
        raise UsageError(f"{root} is not a run directory")
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if (
            path.resolve() in exclude
            or rel in _EXCLUDED_TOP
            or _ATTACHED.match(rel)
            or any(part.startswith(".") for part in rel.split("/"))
        ):
            continue
        if path.is_symlink():
            raise UsageError(f"{rel} in {root} is a symbolic link; a bundle holds regular files only")
        if path.is_file():
            _bundleable_name(rel, root)
            files[rel] = path.read_bytes()
    return files


def _bundleable_name(rel: str, root: Path) -> None:
    """Refuse at pack time what verify would refuse: a name that is not plain letters, digits, '.', '_', '-',
    or a path byog's one tar header cannot hold."""
    try:
        check_name(rel)
    except UnsafeBundle:
        raise UsageError(
            f"{rel} in {root} cannot go into a bundle: use only letters, digits, '.', '_' and '-' in names"
        ) from None
    if split_name(rel) is None:
        raise UsageError(
            f"{rel[:60]}... in {root} cannot go into a bundle: its path is {len(rel)} characters, and a tar header "
            f"holds at most {MAX_NAME} (split at a '/' into 155 and 100): shorten the server, point or task names"
        )


def tar_gz(files: dict[str, bytes]) -> bytes:
    """The deterministic archive of ``files`` (path -> bytes): the manifest, its signature and signer.json
    first (what verify reads before it knows the signer), then the rest sorted by path."""
    raw = io.BytesIO()
    write_tar(raw, ((name, len(files[name]), io.BytesIO(files[name])) for name in archive_order(files)))
    return bundle_gzip(raw.getvalue())


def _gzip_member(files: dict[str, bytes], name: str) -> str:
    files[f"{name}.gz"] = gzip_bytes(files.pop(name))
    return f"{name}.gz"


def _zstd_parquet(data: bytes) -> bytes:
    """The same rows with zstd's highest level, the file's metadata (its schema version) and column encodings kept."""
    return recompress(data, level=19)


def bundle_contents(run_dir: RunDir, *, exclude: AbstractSet[Path] = frozenset()) -> BundleContents:
    """The files of the bundle before the budget is applied (logs already gzipped)."""
    files = collect_files(run_dir, exclude=exclude)
    for required in ("plan.yaml", "summary.json", "report.md"):
        if required not in files:
            raise UsageError(f"{run_dir.root} has no {required}; run `byog derive {run_dir.root}` first")
    for name in [n for n in files if n.endswith(".log")]:
        _gzip_member(files, name)
    return BundleContents(files=files)


def _packed(contents: BundleContents, signature: bytes | None) -> bytes:
    files = dict(contents.files)
    files[MANIFEST_NAME] = statement_bytes(
        build_statement(contents.files, compressed=contents.compressed, subject=contents.subject)
    )
    if signature is not None:
        files[SIGNATURE_NAME] = signature
    return tar_gz(files)


def _cut_log(data: bytes, head: int = LOG_HEAD_LINES, tail: int = LOG_TAIL_LINES) -> bytes:
    lines = gzip.decompress(data).splitlines(keepends=True)
    if len(lines) <= head + tail:
        return data
    marker = f"... byog pack: {len(lines) - head - tail} lines cut here to fit the bundle size budget ...\n".encode()
    return gzip_bytes(b"".join([*lines[:head], marker, *lines[-tail:]]))


def fit_budget(contents: BundleContents, budget_bytes: int = BUDGET_BYTES, *, parts: bool = False) -> BundleContents:
    """Shrink what can be shrunk until the packed bundle fits; fail naming the biggest files.

    The outer gzip already compresses text, so gzipping a member alone saves little. What does:
    re-encoding raw parquet rows with zstd at its highest level, then cutting each server log to
    its first and last lines (logs are evidence, never a source of numbers). The manifest lists
    every path changed this way under ``predicate.compressed``. ``parts``: still over budget, the
    squeezed contents are returned for a signed multi-part bundle (``byog.bundles.parts``).
    """
    # A signature is ~300 bytes; leave room for it rather than re-packing after signing.
    if len(_packed(contents, b"\0" * 1024)) <= budget_bytes:
        return contents
    files = dict(contents.files)
    changed = set(contents.compressed)
    for name in sorted(n for n in files if n.endswith(".prom")):
        changed.add(_gzip_member(files, name))
    for name in sorted(n for n in files if n.endswith(".parquet")):
        files[name] = _zstd_parquet(files[name])
        changed.add(name)
    smaller = BundleContents(files=files, compressed=sorted(changed), subject=contents.subject)
    if len(_packed(smaller, b"\0" * 1024)) <= budget_bytes:
        return smaller
    for name in sorted(n for n in files if n.endswith(".log.gz")):
        cut = _cut_log(files[name])
        if cut != files[name]:
            files[name] = cut
            changed.add(name)
    smaller = BundleContents(files=files, compressed=sorted(changed), subject=contents.subject)
    size = len(_packed(smaller, b"\0" * 1024))
    if size <= budget_bytes or parts:
        return smaller
    biggest = sorted(files.items(), key=lambda item: (-len(item[1]), item[0]))[:5]
    listing = ", ".join(f"{name} ({len(data) / 1e6:.1f} MB)" for name, data in biggest)
    raise CheckFailed(
        f"the bundle is {size / 1e6:.1f} MB even compressed, over the {budget_bytes / 1e6:.0f} MB budget, and an "
        f"unsigned bundle cannot travel in parts (sign it); biggest files: {listing}"
    )


@dataclass
class Sealed:
    contents: BundleContents
    manifest: bytes
    signature: bytes | None


def seal(
    run_dir: RunDir,
    *,
    exclude: AbstractSet[Path] = frozenset(),
    budget_bytes: int = BUDGET_BYTES,
    subject: BundleSubject | None = None,
    parts: bool = False,
) -> Sealed:
    """Collect and fit the files, write manifest.intoto.json into the run directory, keep a valid signature.

    A signature whose manifest changed is stale: it is removed here, and signing is the caller's step.
    """
    contents = bundle_contents(run_dir, exclude=exclude)
    contents.subject = subject
    contents = fit_budget(contents, budget_bytes, parts=parts)
    manifest = statement_bytes(build_statement(contents.files, compressed=contents.compressed, subject=subject))
    manifest_path = run_dir.root / MANIFEST_NAME
    signature_path = run_dir.root / SIGNATURE_NAME
    if not manifest_path.is_file() or manifest_path.read_bytes() != manifest:
        atomic_write_bytes(manifest_path, manifest)
        signature_path.unlink(missing_ok=True)
    signature = signature_path.read_bytes() if signature_path.is_file() else None
    return Sealed(contents=contents, manifest=manifest, signature=signature)


def archive_bytes(sealed: Sealed) -> bytes:
    """The deterministic bundle archive of sealed contents, their manifest and its signature."""
    files = dict(sealed.contents.files)
    files[MANIFEST_NAME] = sealed.manifest
    if sealed.signature is not None:
        files[SIGNATURE_NAME] = sealed.signature
    return tar_gz(files)


def pack(sealed: Sealed, out: Path) -> Path:
    atomic_write_bytes(out, archive_bytes(sealed))
    return out
