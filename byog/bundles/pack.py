"""Seal a run directory into a bundle: collect its files, write the manifest, pack a tar.gz.

The archive is deterministic: regular files only, sorted names, mtime 0, uid/gid 0, empty
uname/gname, mode 0644, and a gzip header with mtime 0 and no file name, so packing the same
run directory twice gives the same bytes (Ed25519 SSH signatures are deterministic too).

Size budget: GitHub accepts PR attachments up to 25 MB. Server logs are always gzipped
(``server.log`` -> ``server.log.gz``); over budget, raw parquet rows are re-encoded with zstd's
highest level and ``/metrics`` snapshots gzipped, then server logs cut to their first and last
lines; still over budget, packing fails and names the biggest files.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import struct
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterable

from byog.bundles.manifest import MANIFEST_NAME, SIGNATURE_NAME, build_statement, statement_bytes
from byog.bundles.rundir import RunDir
from byog.errors import CheckFailed, UsageError
from byog.ioutil import atomic_write_bytes

BUNDLE_NAME = "bundle.tar.gz"
BUDGET_BYTES = 25 * 1000 * 1000  # GitHub's PR attachment limit, counted in decimal MB to be safe
GZIP_LEVEL = 9
# The fixed part of the gzip header byog writes: magic, deflate, FLG = FCOMMENT, mtime 0, XFL 2
# (level 9), OS 255. The comment that follows is "byog-sha256=<hex>": the sha256 of every byte
# after it (deflate data + CRC-32 + length). Deflate has redundant encodings (a flipped byte can
# decode to the same tar), so gzip's CRC alone cannot prove the archive is byte-for-byte as packed.
GZIP_HEADER = bytes([0x1F, 0x8B, 0x08, 0x10, 0, 0, 0, 0, 0x02, 0xFF])
GZIP_COMMENT_PREFIX = b"byog-sha256="
FILE_MODE = 0o644
LOG_HEAD_LINES = 2000  # over budget, a server log keeps its start-up ...
LOG_TAIL_LINES = 8000  # ... and its end

# Never part of a bundle: the bundle itself, and temp files of interrupted atomic writes.
_EXCLUDED_TOP = {BUNDLE_NAME, MANIFEST_NAME, SIGNATURE_NAME}


@dataclass
class BundleContents:
    files: dict[str, bytes]  # bundle path -> bytes; manifest and signature not included
    compressed: list[str] = field(default_factory=list)  # paths that were compressed to fit the budget


def collect_files(run_dir: RunDir, *, exclude: set[Path] = frozenset()) -> dict[str, bytes]:
    """Every regular file under the run directory, by '/'-separated relative path."""
    root = run_dir.root
    if not root.is_dir():
        raise UsageError(f"{root} is not a run directory")
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.resolve() in exclude or rel in _EXCLUDED_TOP or any(part.startswith(".") for part in rel.split("/")):
            continue
        if path.is_symlink():
            raise UsageError(f"{rel} in {root} is a symbolic link; a bundle holds regular files only")
        if path.is_file():
            _bundleable_name(rel, root)
            files[rel] = path.read_bytes()
    return files


def _bundleable_name(rel: str, root: Path) -> None:
    """Refuse at pack time what verify would refuse: a name that is not plain letters, digits, '.', '_', '-'."""
    from byog.bundles.unpack import UnsafeBundle, check_name

    try:
        check_name(rel)
    except UnsafeBundle:
        raise UsageError(f"{rel} in {root} cannot go into a bundle: use only letters, digits, '.', '_' and '-' in names") from None


def gzip_bytes(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=GZIP_LEVEL, mtime=0) as handle:
        handle.write(data)
    return buffer.getvalue()


def member_info(name: str, size: int) -> tarfile.TarInfo:
    """The one tar header byog writes for a file (verify rebuilds it to prove an archive canonical)."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = FILE_MODE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def write_tar(sink: BinaryIO, members: Iterable[tuple[str, int, BinaryIO]]) -> None:
    """Write (name, size, data) members, in the order given, as byog's uncompressed tar stream."""
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tar:
        for name, size, data in members:
            tar.addfile(member_info(name, size), data)


def bundle_gzip(raw: bytes) -> bytes:
    """gzip of the tar stream with a self-checking header (see GZIP_HEADER); still plain gzip to any tool."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = compressor.compress(raw) + compressor.flush() + struct.pack("<II", zlib.crc32(raw), len(raw) & 0xFFFFFFFF)
    comment = GZIP_COMMENT_PREFIX + hashlib.sha256(body).hexdigest().encode() + b"\0"
    return GZIP_HEADER + comment + body


def tar_gz(files: dict[str, bytes]) -> bytes:
    """The deterministic archive of ``files`` (path -> bytes), sorted by path."""
    raw = io.BytesIO()
    write_tar(raw, ((name, len(files[name]), io.BytesIO(files[name])) for name in sorted(files)))
    return bundle_gzip(raw.getvalue())


def _gzip_member(files: dict[str, bytes], name: str) -> str:
    files[f"{name}.gz"] = gzip_bytes(files.pop(name))
    return f"{name}.gz"


def _zstd_parquet(data: bytes) -> bytes:
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd", compression_level=19)
    return out.getvalue()


def bundle_contents(run_dir: RunDir, *, exclude: set[Path] = frozenset()) -> BundleContents:
    """The files of the bundle before the budget is applied (logs already gzipped)."""
    files = collect_files(run_dir, exclude=exclude)
    for required in ("plan.yaml", "summary.json", "report.md"):
        if required not in files:
            raise UsageError(f"{run_dir.root} has no {required}; run `byog compare {run_dir.root}` first")
    for name in [n for n in files if n.endswith(".log")]:
        _gzip_member(files, name)
    return BundleContents(files=files)


def _packed(contents: BundleContents, signature: bytes | None) -> bytes:
    files = dict(contents.files)
    files[MANIFEST_NAME] = statement_bytes(build_statement(contents.files, compressed=contents.compressed))
    if signature is not None:
        files[SIGNATURE_NAME] = signature
    return tar_gz(files)


def _cut_log(data: bytes, head: int = LOG_HEAD_LINES, tail: int = LOG_TAIL_LINES) -> bytes:
    lines = gzip.decompress(data).splitlines(keepends=True)
    if len(lines) <= head + tail:
        return data
    marker = f"... byog pack: {len(lines) - head - tail} lines cut here to fit the bundle size budget ...\n".encode()
    return gzip_bytes(b"".join([*lines[:head], marker, *lines[-tail:]]))


def fit_budget(contents: BundleContents, budget_bytes: int = BUDGET_BYTES) -> BundleContents:
    """Shrink what can be shrunk until the packed bundle fits; fail naming the biggest files.

    The outer gzip already compresses text, so gzipping a member alone saves little. What does:
    re-encoding raw parquet rows with zstd at its highest level, then cutting each server log to
    its first and last lines (logs are evidence, never a source of numbers). The manifest lists
    every path changed this way under ``predicate.compressed``.
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
    smaller = BundleContents(files=files, compressed=sorted(changed))
    if len(_packed(smaller, b"\0" * 1024)) <= budget_bytes:
        return smaller
    for name in sorted(n for n in files if n.endswith(".log.gz")):
        cut = _cut_log(files[name])
        if cut != files[name]:
            files[name] = cut
            changed.add(name)
    smaller = BundleContents(files=files, compressed=sorted(changed))
    size = len(_packed(smaller, b"\0" * 1024))
    if size <= budget_bytes:
        return smaller
    biggest = sorted(files.items(), key=lambda item: (-len(item[1]), item[0]))[:5]
    listing = ", ".join(f"{name} ({len(data) / 1e6:.1f} MB)" for name, data in biggest)
    raise CheckFailed(
        f"the bundle is {size / 1e6:.1f} MB even compressed, over the {budget_bytes / 1e6:.0f} MB budget; "
        f"biggest files: {listing}"
    )


@dataclass
class Sealed:
    contents: BundleContents
    manifest: bytes
    signature: bytes | None


def seal(run_dir: RunDir, *, exclude: set[Path] = frozenset(), budget_bytes: int = BUDGET_BYTES) -> Sealed:
    """Collect and fit the files, write manifest.intoto.json into the run directory, keep a valid signature.

    A signature whose manifest changed is stale: it is removed here, and signing is the caller's step.
    """
    contents = fit_budget(bundle_contents(run_dir, exclude=exclude), budget_bytes)
    manifest = statement_bytes(build_statement(contents.files, compressed=contents.compressed))
    manifest_path = run_dir.root / MANIFEST_NAME
    signature_path = run_dir.root / SIGNATURE_NAME
    if not manifest_path.is_file() or manifest_path.read_bytes() != manifest:
        atomic_write_bytes(manifest_path, manifest)
        signature_path.unlink(missing_ok=True)
    signature = signature_path.read_bytes() if signature_path.is_file() else None
    return Sealed(contents=contents, manifest=manifest, signature=signature)


def pack(sealed: Sealed, out: Path) -> Path:
    files = dict(sealed.contents.files)
    files[MANIFEST_NAME] = sealed.manifest
    if sealed.signature is not None:
        files[SIGNATURE_NAME] = sealed.signature
    atomic_write_bytes(out, tar_gz(files))
    return out
