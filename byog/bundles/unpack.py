"""Safe extraction of an untrusted bundle: every member is vetted before a byte is written.

Refused, each with one sentence: a file that is not byog's gzip, a gzip stream that expands past
the cap (read through a counting reader, so a bomb stops at the cap, not at the end), path
traversal, absolute paths, names that are not plain '/'-separated components, non-UTF-8 names,
duplicate names, a name that is both a file and a folder, symlinks, hardlinks, devices, fifos,
members over the size cap (and over their kind's cap, ``byog.bundles.bounds.SIZE_CAPS``: a
255 MB env.json or a 200 MB signature stops at its tar header), too many members, and trailing
data. Files are created with
O_EXCL|O_NOFOLLOW under a fresh private temp dir (0700), never anywhere else.

The temp dir is named ``byog-verify-<pid>-*`` and removed on exit; one left behind by a verify
that was killed (SIGKILL leaves no chance to clean up) is removed by the next verify, once no
process of that id is alive.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from byog.bundles.archive import (
    FILE_MODE,
    GZIP_COMMENT_PREFIX,
    GZIP_HEADER,
    UnsafeBundle,
    check_name,
    write_tar,
)
from byog.bundles.bounds import size_cap
from byog.core.errors import UsageError
from byog.core.processes import process_alive

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    max_bundle_bytes: int = 64 * 1000 * 1000  # the archive file itself (budget is 25 MB)
    max_members: int = 10_000
    max_member_bytes: int = 256 * 1024 * 1024
    max_total_bytes: int = 512 * 1024 * 1024  # sum of member sizes
    max_stream_bytes: int = 520 * 1024 * 1024  # decompressed tar stream, headers and padding included


class _CappedReader:
    """A read-only stream over gzip that fails once more than ``cap`` bytes were decompressed."""

    def __init__(self, inner: BinaryIO, cap: int) -> None:
        self.inner = inner
        self.cap = cap
        self.count = 0
        self.sha256 = hashlib.sha256()  # of the whole tar stream, to prove it canonical afterwards

    def read(self, size: int = -1) -> bytes:
        want = self.cap + 1 - self.count if size is None or size < 0 else min(size, self.cap + 1 - self.count)
        data = self.inner.read(max(want, 0))
        self.count += len(data)
        self.sha256.update(data)
        if self.count > self.cap:
            raise UnsafeBundle(f"unsafe bundle: it expands past {self.cap / 2**20:.0f} MiB (a decompression bomb?)")
        return data


_KIND = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a fifo",
    tarfile.DIRTYPE: "a directory entry",
    tarfile.CONTTYPE: "a contiguous file",
    tarfile.GNUTYPE_SPARSE: "a sparse file",
}


def _check_member(info: tarfile.TarInfo, limits: Limits) -> None:
    name = check_name(info.name)
    if not info.isreg() or info.type == tarfile.CONTTYPE or info.issparse():
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' is {_KIND.get(info.type, f'of tar type {info.type!r}')}, not a regular file"
        )
    if info.size > limits.max_member_bytes:
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' is {info.size} bytes, over the {limits.max_member_bytes} byte cap"
        )
    kind_cap = size_cap(name)  # from the tar header, before a byte of the member is read
    if kind_cap is not None and info.size > kind_cap:
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' is {info.size:,} bytes, over the {kind_cap:,} byte cap for its kind"
        )
    # byog writes exactly these header fields; anything else is not a byog bundle.
    if info.mtime != 0 or info.uid != 0 or info.gid != 0 or info.uname or info.gname or info.mode != FILE_MODE:
        raise UnsafeBundle(f"unsafe bundle: member '{name}' has tar metadata byog never writes (mtime, owner or mode)")
    if set(info.pax_headers) - {"path"}:
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' has pax headers byog never writes: {sorted(info.pax_headers)}"
        )


class _Member:
    """A member's data as tar hands it over: counted, capped, and copied to disk when extracting."""

    def __init__(self, source: BinaryIO, name: str, size: int, target: Path | None) -> None:
        self.source = source
        self.name = name
        self.size = size
        self.read_bytes = 0
        self.out: BinaryIO | None = None
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            self.out = os.fdopen(fd, "wb")

    def read(self, size: int = -1) -> bytes:
        left = self.size - self.read_bytes
        data = self.source.read(left if size is None or size < 0 else min(size, left))
        self.read_bytes += len(data)
        if self.out is not None:
            self.out.write(data)
        return data

    def close_file(self) -> None:
        if self.out is not None:
            self.out.close()

    def require_complete(self) -> None:
        if self.read_bytes != self.size:
            raise UnsafeBundle(f"unsafe bundle: member '{self.name}' is truncated")


class _HashSink:
    """Where the canonical tar stream is written: only its sha256 and length are kept."""

    def __init__(self) -> None:
        self.sha256 = hashlib.sha256()
        self.count = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.count += len(data)
        return len(data)

    def tell(self) -> int:
        return self.count


def _open_gzip(path: Path, limits: Limits) -> BinaryIO:
    """Open the bundle after checking byog's gzip header and the sha256 it carries of the rest."""
    try:
        size = path.stat().st_size
        handle = path.open("rb")
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
    try:
        if size > limits.max_bundle_bytes:
            raise UnsafeBundle(
                f"unsafe bundle: {path.name} is {size / 1e6:.1f} MB, over the {limits.max_bundle_bytes / 1e6:.0f} MB cap"
            )
        comment = handle.read(len(GZIP_HEADER) + len(GZIP_COMMENT_PREFIX) + 65)
        expected = comment[len(GZIP_HEADER) + len(GZIP_COMMENT_PREFIX) : -1]
        if (
            comment[: len(GZIP_HEADER)] != GZIP_HEADER
            or comment[len(GZIP_HEADER) : len(GZIP_HEADER) + len(GZIP_COMMENT_PREFIX)] != GZIP_COMMENT_PREFIX
            or comment[-1:] != b"\0"
            or not re.fullmatch(rb"[0-9a-f]{64}", expected)
        ):
            raise UnsafeBundle(f"{path.name} is not a byog bundle: its gzip header is not the one byog writes")
        digest = hashlib.sha256()
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
        if digest.hexdigest().encode() != expected:
            raise UnsafeBundle(f"{path.name} is corrupt: its bytes do not match the sha256 in its gzip header")
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return handle


def _scan(path: Path, limits: Limits, dest: Path | None) -> list[str]:
    """One pass over the archive: vet every member, and write it under ``dest`` when given.

    While reading, the tar stream byog's packer would write for the same members is rebuilt into
    a hash: every byte of the bundle is then either file content (covered by the manifest's
    hashes and the signature) or a header, padding or end block pinned by that comparison. No
    byte can change without verify noticing, even where tar itself would not care.
    """
    names: list[str] = []
    seen: set[str] = set()
    folders: set[str] = set()
    total = 0
    raw = _open_gzip(path, limits)
    canonical = _HashSink()
    try:
        stream = _CappedReader(gzip.GzipFile(fileobj=raw, mode="rb"), limits.max_stream_bytes)
        with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:  # type: ignore[call-overload]

            def members():  # noqa: ANN202  (a generator: write_tar pulls one vetted member at a time)
                nonlocal total
                for info in tar:
                    if len(names) >= limits.max_members:
                        raise UnsafeBundle(f"unsafe bundle: more than {limits.max_members} members")
                    _check_member(info, limits)
                    if info.name in seen or info.name in folders:
                        raise UnsafeBundle(f"unsafe bundle: member '{info.name}' appears twice or is also a folder")
                    if names and info.name < names[-1]:
                        raise UnsafeBundle("not a canonical byog archive: members are not in sorted order")
                    parents = info.name.split("/")[:-1]
                    for depth in range(1, len(parents) + 1):
                        folder = "/".join(parents[:depth])
                        if folder in seen:
                            raise UnsafeBundle(f"unsafe bundle: '{folder}' is both a file and a folder")
                        folders.add(folder)
                    total += info.size
                    if total > limits.max_total_bytes:
                        raise UnsafeBundle(f"unsafe bundle: members add up to more than {limits.max_total_bytes} bytes")
                    source = tar.extractfile(info)
                    assert source is not None  # regular files always have data
                    member = _Member(source, info.name, info.size, dest / info.name if dest is not None else None)
                    names.append(info.name)
                    seen.add(info.name)
                    try:
                        yield info.name, info.size, member
                    finally:
                        member.close_file()
                    member.require_complete()

            write_tar(canonical, members())  # type: ignore[arg-type]
            # Read the rest of the stream: tar's end blocks, then gzip's CRC-32 and length check.
            while rest := stream.read(_CHUNK):
                if rest.strip(b"\0"):
                    raise UnsafeBundle("unsafe bundle: data follows the end of the tar archive")
            if raw.read(1):
                raise UnsafeBundle("unsafe bundle: data follows the end of the gzip stream")
    except UnsafeBundle:
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise UnsafeBundle(f"{path.name} is not a valid bundle archive: {err}") from None
    finally:
        raw.close()
    if not names:
        raise UnsafeBundle(f"{path.name} is an empty archive")
    if canonical.count != stream.count or canonical.sha256.digest() != stream.sha256.digest():
        raise UnsafeBundle(
            "not a canonical byog archive: its tar headers, padding or end blocks differ from what byog writes"
        )
    return names


_TEMP_PREFIX = "byog-verify-"
_TEMP_NAME = re.compile(r"^byog-verify-(\d+)-")


def sweep_stale_temp_dirs() -> list[Path]:
    """Remove this user's byog-verify-<pid>-* temp dirs whose process is gone; return them."""
    removed = []
    try:
        entries = list(Path(tempfile.gettempdir()).iterdir())
    except OSError:
        return removed
    for entry in entries:
        found = _TEMP_NAME.match(entry.name)
        if not found or int(found.group(1)) == os.getpid() or process_alive(int(found.group(1))):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink() and entry.stat().st_uid == os.getuid():
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
        except OSError:
            continue
    return removed


class Extracted:
    """A bundle extracted into a private temp dir, removed on exit."""

    def __init__(self, bundle: Path, limits: Limits = Limits()) -> None:
        self.bundle = bundle
        self.limits = limits
        self.root: Path | None = None
        self.names: list[str] = []

    def __enter__(self) -> Extracted:
        _scan(self.bundle, self.limits, None)  # vet first: a bad archive costs no temp dir at all
        sweep_stale_temp_dirs()
        self.root = Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{os.getpid()}-"))
        try:
            self.names = _scan(self.bundle, self.limits, self.root)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
