"""Safe extraction of an untrusted bundle, in one pass: every member is vetted from its tar header
before a byte of it is written, into a private temp dir that is removed when anything is refused.

Refused, each with one sentence: a file that is not byog's gzip container (one member, the header
byog writes, nothing after its trailer: ``_Container``), a gzip stream that expands past the cap
(read through a counting reader, so a bomb stops at the cap, not at the end), path
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

import hashlib
import os
import re
import shutil
import struct
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from byog.bundles.archive import (
    FILE_MODE,
    GZIP_COMMENT_PREFIX,
    GZIP_HEADER,
    UnsafeBundle,
    check_name,
    member_header,
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


class _Container:
    """byog's gzip container, read in one pass: exactly the header the packer writes, one deflate
    stream, its CRC-32 and length, and nothing after them.

    ``gzip.GzipFile`` would read on through further gzip members and NUL padding without a word,
    so a "verified" file could carry bytes no signature covers (a second member's comment, a ZIP
    appended in an extra field, megabytes of padding). Here the header is parsed by hand and
    compared with ``GZIP_HEADER`` (FLG = FCOMMENT only: no FEXTRA, FNAME or FHCRC, which byog never
    writes), the comment must be exactly ``byog-sha256=<64 hex>\\0``, and after the deflate stream
    ends exactly the 8 trailer bytes may remain. ``read`` hands the tar stream to tarfile, capped at
    ``cap`` bytes (a bomb stops at the cap, not at its end).
    """

    _COMMENT_BYTES = len(GZIP_COMMENT_PREFIX) + 64 + 1

    def __init__(self, path: Path, limits: Limits) -> None:
        self.name = path.name
        self.cap = limits.max_stream_bytes
        try:
            self.size = path.stat().st_size
            self.handle = path.open("rb")
        except OSError as err:
            raise UsageError(f"cannot read {path}: {err.strerror}") from None
        try:
            if self.size > limits.max_bundle_bytes:
                cap = limits.max_bundle_bytes / 1e6
                raise UnsafeBundle(f"unsafe bundle: {path.name} is {self.size / 1e6:.1f} MB, over the {cap:.0f} MB cap")
            head = self.handle.read(len(GZIP_HEADER) + self._COMMENT_BYTES)
            comment = head[len(GZIP_HEADER) :]
            expected = comment[len(GZIP_COMMENT_PREFIX) : -1]
            if (
                head[: len(GZIP_HEADER)] != GZIP_HEADER
                or not comment.startswith(GZIP_COMMENT_PREFIX)
                or comment[-1:] != b"\0"
                or not re.fullmatch(rb"[0-9a-f]{64}", expected)
            ):
                raise UnsafeBundle(f"{path.name} is not a byog bundle: its gzip header is not the one byog writes")
        except BaseException:
            self.handle.close()
            raise
        self.expected_sha256 = expected.decode()
        self.body_sha256 = hashlib.sha256()  # of every byte after the header: deflate data and trailer
        self.inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        self.crc = 0
        self.count = 0
        self.sha256 = hashlib.sha256()  # of the whole tar stream, to prove it canonical afterwards

    def _more(self, want: int) -> bytes:
        """Up to ``want`` more bytes of the tar stream; b"" once the deflate stream has ended."""
        while not self.inflate.eof:
            if self.inflate.unconsumed_tail:
                data = self.inflate.decompress(self.inflate.unconsumed_tail, want)
            else:
                chunk = self.handle.read(_CHUNK)
                if not chunk:
                    raise UnsafeBundle(f"{self.name} is not a valid bundle archive: its deflate stream is cut short")
                self.body_sha256.update(chunk)
                data = self.inflate.decompress(chunk, want)
            if data:
                return data
        return b""

    def read(self, size: int = -1) -> bytes:
        room = self.cap + 1 - self.count
        want = room if size is None or size < 0 else min(size, room)
        parts: list[bytes] = []
        got = 0
        while got < want and (data := self._more(min(want - got, _CHUNK))):
            parts.append(data)
            got += len(data)
        out = b"".join(parts)
        self.count += len(out)
        if self.count > self.cap:
            raise UnsafeBundle(f"unsafe bundle: it expands past {self.cap / 2**20:.0f} MiB (a decompression bomb?)")
        self.crc = zlib.crc32(out, self.crc)
        self.sha256.update(out)
        return out

    def finish(self) -> None:
        """After the tar stream: the deflate stream ended, then exactly its CRC-32 and length, then nothing."""
        if not self.inflate.eof:
            raise UnsafeBundle(f"{self.name} is not a valid bundle archive: its deflate stream is cut short")
        left = self.size - self.handle.tell()
        after = len(self.inflate.unused_data) + left
        if after < 8:
            raise UnsafeBundle(f"{self.name} is not a valid bundle archive: its gzip trailer is cut short")
        if after > 8:
            raise UnsafeBundle(
                f"unsafe bundle: data follows the end of the gzip stream ({after - 8:,} bytes; "
                "byog writes one gzip member and nothing after it)"
            )
        rest = self.handle.read(left)
        self.body_sha256.update(rest)
        trailer = self.inflate.unused_data + rest
        crc, length = struct.unpack("<II", trailer)
        if crc != self.crc or length != self.count & 0xFFFFFFFF:
            raise UnsafeBundle(f"{self.name} is corrupt: its CRC-32 or length does not match its content")
        if self.body_sha256.hexdigest() != self.expected_sha256:
            raise UnsafeBundle(f"{self.name} is corrupt: its bytes do not match the sha256 in its gzip header")

    def close(self) -> None:
        self.handle.close()


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
            f"unsafe bundle: member '{name}' is {_KIND.get(info.type, f'of tar type {info.type!r}')}, "
            "not a regular file"
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

    def __init__(self, source: BinaryIO, name: str, size: int, target: Path, made: set[Path]) -> None:
        self.source = source
        self.name = name
        self.size = size
        self.read_bytes = 0
        if target.parent not in made:  # one mkdir per folder, not per member
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            made.add(target.parent)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        self.out: BinaryIO | None = os.fdopen(fd, "wb")
        self.sha256 = hashlib.sha256()  # while it is written: the hashes check need not read it back

    def read(self, size: int = -1) -> bytes:
        left = self.size - self.read_bytes
        data = self.source.read(left if size is None or size < 0 else min(size, left))
        self.read_bytes += len(data)
        self.sha256.update(data)
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


def _scan(path: Path, limits: Limits, dest: Path, digests: dict[str, str]) -> list[str]:
    """One pass over the archive: vet every member, write it under ``dest`` (private, removed by
    the caller when this raises) and its sha256 into ``digests``.

    While reading, the tar stream byog's packer would write for the same members (``write_tar``:
    ``member_header``, the data, zero padding, tarfile's end blocks) is rebuilt into a hash: every
    byte of the bundle is then either file content (covered by the manifest's hashes and the
    signature) or a header, padding or end block pinned by that comparison. No byte can change
    without verify noticing, even where tar itself would not care.
    """
    names: list[str] = []
    seen: set[str] = set()
    folders: set[str] = set()
    made: set[Path] = set()
    total = 0
    stream = _Container(path, limits)
    canonical = _HashSink()
    try:
        # a stream ("r|") is only read(); typeshed asks any fileobj for write, tell, seek and close too
        with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:  # type: ignore[call-overload]

            def members() -> Iterator[tuple[str, int, _Member]]:  # one vetted member at a time
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
                    member = _Member(source, info.name, info.size, dest / info.name, made)
                    names.append(info.name)
                    seen.add(info.name)
                    try:
                        yield info.name, info.size, member
                    finally:
                        member.close_file()
                    member.require_complete()
                    digests[info.name] = member.sha256.hexdigest()

            for name, size, member in members():
                canonical.write(member_header(name, size))
                while chunk := member.read(_CHUNK):
                    canonical.write(chunk)
                canonical.write(b"\0" * (-size % tarfile.BLOCKSIZE))
            # tarfile's end of archive: two zero blocks, then zeros to a whole record
            canonical.write(b"\0" * (2 * tarfile.BLOCKSIZE))
            canonical.write(b"\0" * (-canonical.count % tarfile.RECORDSIZE))
            # The rest of the tar stream is its end blocks (pinned below), then the gzip trailer.
            while rest := stream.read(_CHUNK):
                if rest.strip(b"\0"):
                    raise UnsafeBundle("unsafe bundle: data follows the end of the tar archive")
            stream.finish()
    except UnsafeBundle:
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise UnsafeBundle(f"{path.name} is not a valid bundle archive: {err}") from None
    finally:
        stream.close()
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
    removed: list[Path] = []
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
        self.digests: dict[str, str] = {}  # member name -> sha256 of its bytes, computed while extracting

    def __enter__(self) -> Extracted:
        sweep_stale_temp_dirs()
        self.root = Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{os.getpid()}-"))
        try:
            self.names = _scan(self.bundle, self.limits, self.root, self.digests)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
