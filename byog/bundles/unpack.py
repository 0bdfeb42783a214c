"""Safe extraction of an untrusted bundle: every member is vetted from its tar header before a byte
of it is written, into a private temp dir that is removed when anything is refused. ``verify``
first reads the archive without writing anything (``Extracted(deferred=True)``: members hashed,
the manifest and its signature kept in memory) and extracts it only once the signer is trusted.

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
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

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


def _check_size(name: str, size: int, limits: Limits) -> None:
    if size > limits.max_member_bytes:
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' is {size} bytes, over the {limits.max_member_bytes} byte cap"
        )
    kind_cap = size_cap(name)  # from the tar header, before a byte of the member is read
    if kind_cap is not None and size > kind_cap:
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' is {size:,} bytes, over the {kind_cap:,} byte cap for its kind"
        )


def _check_member(info: tarfile.TarInfo, limits: Limits) -> None:
    name = check_name(info.name)
    if not info.isreg() or info.type == tarfile.CONTTYPE or info.issparse():
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' is {_KIND.get(info.type, f'of tar type {info.type!r}')}, "
            "not a regular file"
        )
    _check_size(name, info.size, limits)
    # byog writes exactly these header fields; anything else is not a byog bundle.
    if info.mtime != 0 or info.uid != 0 or info.gid != 0 or info.uname or info.gname or info.mode != FILE_MODE:
        raise UnsafeBundle(f"unsafe bundle: member '{name}' has tar metadata byog never writes (mtime, owner or mode)")
    if set(info.pax_headers) - {"path"}:
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' has pax headers byog never writes: {sorted(info.pax_headers)}"
        )


class _Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Member:
    """A member's data as tar hands it over: counted, capped, hashed, and copied to disk (``target``)
    or kept in memory (``keep``: the small members the signature check reads) as it is read."""

    def __init__(self, source: _Source, name: str, size: int, target: Path | None, made: set[Path], keep: bool) -> None:
        self.source = source
        self.name = name
        self.size = size
        self.read_bytes = 0
        self.out: BinaryIO | None = None
        self.kept: list[bytes] | None = [] if keep else None  # size-capped by its kind at the tar header
        if target is not None:
            if target.parent not in made:  # one mkdir per folder, not per member
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                made.add(target.parent)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            self.out = os.fdopen(fd, "wb")
        self.sha256 = hashlib.sha256()  # while it is read: the hashes check need not read it back

    def read(self, size: int = -1) -> bytes:
        left = self.size - self.read_bytes
        data = self.source.read(left if size is None or size < 0 else min(size, left))
        self.read_bytes += len(data)
        self.sha256.update(data)
        if self.out is not None:
            self.out.write(data)
        if self.kept is not None:
            self.kept.append(data)
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


@dataclass
class _Scan:
    """What one pass over the archive found: member names in order, each one's sha256, and the bytes
    of the members it was asked to keep."""

    names: list[str]
    digests: dict[str, str]
    held: dict[str, bytes]


class _NotPlain(Exception):
    """A tar header other than the plain one byog writes for a short ASCII name: read with tarfile instead."""


_ZERO_BLOCK = bytes(tarfile.BLOCKSIZE)


class _Pass:
    """One pass over the archive: the rules every member is held to, whichever reader parses the
    headers, and the canonical tar stream rebuilt from what they admitted."""

    def __init__(self, limits: Limits, dest: Path | None, keep: frozenset[str]) -> None:
        self.limits = limits
        self.dest = dest
        self.keep = keep
        self.found = _Scan([], {}, {})
        self.seen: set[str] = set()
        self.folders: set[str] = set()
        self.made: set[Path] = set()
        self.total = 0
        self.canonical = _HashSink()

    def count_one_more(self) -> None:
        if len(self.found.names) >= self.limits.max_members:
            raise UnsafeBundle(f"unsafe bundle: more than {self.limits.max_members} members")

    def admit(self, name: str, size: int) -> None:
        """What no single header shows: duplicates, order, a file that is also a folder, the total size."""
        names = self.found.names
        if name in self.seen or name in self.folders:
            raise UnsafeBundle(f"unsafe bundle: member '{name}' appears twice or is also a folder")
        if names and name < names[-1]:
            raise UnsafeBundle("not a canonical byog archive: members are not in sorted order")
        parents = name.split("/")[:-1]
        for depth in range(1, len(parents) + 1):
            folder = "/".join(parents[:depth])
            if folder in self.seen:
                raise UnsafeBundle(f"unsafe bundle: '{folder}' is both a file and a folder")
            self.folders.add(folder)
        self.total += size
        if self.total > self.limits.max_total_bytes:
            raise UnsafeBundle(f"unsafe bundle: members add up to more than {self.limits.max_total_bytes} bytes")

    def copy(self, source: _Source, name: str, size: int) -> _Member:
        """Read one admitted member through to its end (written, kept, hashed) and rebuild its canonical bytes."""
        target = None if self.dest is None else self.dest / name
        member = _Member(source, name, size, target, self.made, name in self.keep)
        self.found.names.append(name)
        self.seen.add(name)
        self.canonical.write(member_header(name, size))
        try:
            while chunk := member.read(_CHUNK):
                self.canonical.write(chunk)
        finally:
            member.close_file()
        self.canonical.write(b"\0" * (-size % tarfile.BLOCKSIZE))
        return member

    def record(self, member: _Member) -> None:
        member.require_complete()
        self.found.digests[member.name] = member.sha256.hexdigest()
        if member.kept is not None:
            self.found.held[member.name] = b"".join(member.kept)

    def end(self, stream: _Container) -> None:
        """tarfile's end of archive (two zero blocks, zeros to a whole record), then nothing but zeros."""
        self.canonical.write(b"\0" * (2 * tarfile.BLOCKSIZE))
        self.canonical.write(b"\0" * (-self.canonical.count % tarfile.RECORDSIZE))
        while rest := stream.read(_CHUNK):
            if rest.strip(b"\0"):
                raise UnsafeBundle("unsafe bundle: data follows the end of the tar archive")


def _plain_header(block: bytes) -> tuple[str, int] | None:
    """(name, size) when ``block`` is exactly the header byog writes for them, else None."""
    if len(block) != tarfile.BLOCKSIZE:
        return None
    try:
        name = block[:100].rstrip(b"\0").decode("ascii")
        size = int(block[124:135], 8)
    except (UnicodeDecodeError, ValueError):
        return None
    return (name, size) if member_header(name, size) == block else None


def _read_plain(stream: _Container, scan: _Pass) -> None:
    """Parse byog's plain headers by hand (tarfile's own parsing was most of the cost of 10,000
    members); anything else, short reads included, is left to tarfile (``_NotPlain``), so every
    refusal reads as tarfile's reader words it."""
    while (block := stream.read(tarfile.BLOCKSIZE)) != _ZERO_BLOCK:
        scan.count_one_more()
        parsed = _plain_header(block)
        if parsed is None:
            raise _NotPlain
        name, size = parsed
        _check_size(check_name(name), size, scan.limits)
        scan.admit(name, size)
        member = scan.copy(stream, name, size)
        if member.read_bytes != size or len(stream.read(-size % tarfile.BLOCKSIZE)) != -size % tarfile.BLOCKSIZE:
            raise _NotPlain
        scan.record(member)
    scan.end(stream)


def _read_tar(stream: _Container, scan: _Pass) -> None:
    # a stream ("r|") is only read(); typeshed asks any fileobj for write, tell, seek and close too
    with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:  # type: ignore[call-overload]
        for info in tar:
            scan.count_one_more()
            _check_member(info, scan.limits)
            scan.admit(info.name, info.size)
            source = tar.extractfile(info)
            assert source is not None  # regular files always have data
            scan.record(scan.copy(source, info.name, info.size))
        scan.end(stream)


def _one_pass(path: Path, limits: Limits, dest: Path | None, keep: frozenset[str], plain: bool) -> _Scan:
    scan = _Pass(limits, dest, keep)
    stream = _Container(path, limits)
    try:
        (_read_plain if plain else _read_tar)(stream, scan)
        stream.finish()
    except (UnsafeBundle, _NotPlain):
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise UnsafeBundle(f"{path.name} is not a valid bundle archive: {err}") from None
    finally:
        stream.close()
    if not scan.found.names:
        raise UnsafeBundle(f"{path.name} is an empty archive")
    if scan.canonical.count != stream.count or scan.canonical.sha256.digest() != stream.sha256.digest():
        raise UnsafeBundle(
            "not a canonical byog archive: its tar headers, padding or end blocks differ from what byog writes"
        )
    return scan.found


def _empty(folder: Path) -> None:
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _scan(path: Path, limits: Limits, dest: Path | None, keep: frozenset[str] = frozenset()) -> _Scan:
    """One pass over the archive: vet every member and hash it; write it under ``dest`` (private,
    removed by the caller when this raises) unless ``dest`` is None; keep the members in ``keep``.

    While reading, the tar stream byog's packer would write for the same members (``write_tar``:
    ``member_header``, the data, zero padding, tarfile's end blocks) is rebuilt into a hash: every
    byte of the bundle is then either file content (covered by the manifest's hashes and the
    signature) or a header, padding or end block pinned by that comparison. No byte can change
    without verify noticing, even where tar itself would not care.

    The headers are parsed by hand while they are byog's plain ones; at the first other header
    the pass starts again with tarfile's reader (a pax name, or a hostile header to be refused).
    """
    try:
        return _one_pass(path, limits, dest, keep, plain=True)
    except _NotPlain:
        if dest is not None:
            _empty(dest)
        return _one_pass(path, limits, dest, keep, plain=False)


_TEMP_PREFIX = "byog-verify-"
_TEMP_NAME = re.compile(r"^byog-verify-(\d+)-")


def sweep_stale_temp_dirs() -> list[Path]:
    """Remove this user's byog-verify-<pid>-* temp dirs whose process is gone; return them."""
    removed: list[Path] = []
    # scandir and a prefix test before anything else: a shared /tmp holds thousands of entries,
    # and this runs on every verify.
    try:
        with os.scandir(tempfile.gettempdir()) as entries:
            ours = [entry for entry in entries if entry.name.startswith(_TEMP_PREFIX)]
    except OSError:
        return removed
    for entry in ours:
        found = _TEMP_NAME.match(entry.name)
        if not found or int(found.group(1)) == os.getpid() or process_alive(int(found.group(1))):
            continue
        try:
            if entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid():
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


class Extracted:
    """A bundle vetted and extracted into a private temp dir, removed on exit.

    With ``deferred``, entering vets and hashes every member and keeps ``keep`` (the manifest and
    what the signature check reads) in memory, but writes no file: a bundle refused before its
    signer is trusted (10,000 tiny members from a stranger) costs no file system work. ``extract``
    then reads the archive again and writes it; a second pass that finds other bytes is refused.
    """

    def __init__(
        self, bundle: Path, limits: Limits = Limits(), *, deferred: bool = False, keep: frozenset[str] = frozenset()
    ) -> None:
        self.bundle = bundle
        self.limits = limits
        self.deferred = deferred
        self.keep = keep
        self.root: Path | None = None
        self.names: list[str] = []
        self.digests: dict[str, str] = {}  # member name -> sha256 of its bytes, computed while reading
        self.held: dict[str, bytes] = {}  # member name -> its bytes, for the members in ``keep``
        self.written = False

    def __enter__(self) -> Extracted:
        sweep_stale_temp_dirs()
        self.root = Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{os.getpid()}-"))
        try:
            if self.deferred:
                self._take(_scan(self.bundle, self.limits, None, self.keep))
            else:
                self.extract()
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        return self

    def extract(self) -> None:
        """Write every member under ``root``; the same names and bytes as the first pass, or refused."""
        assert self.root is not None, "extract() runs inside the with block"
        if self.written:
            return
        scan = _scan(self.bundle, self.limits, self.root, self.keep)
        if self.names and (scan.names != self.names or scan.digests != self.digests or scan.held != self.held):
            raise UnsafeBundle(f"unsafe bundle: {self.bundle.name} changed while it was being verified")
        self._take(scan)
        self.written = True

    def _take(self, scan: _Scan) -> None:
        self.names, self.digests, self.held = scan.names, scan.digests, scan.held

    def __exit__(self, *exc: object) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
