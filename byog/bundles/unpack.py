"""Safe extraction of an untrusted bundle: every member is vetted from its tar header before a byte
of it is written, into a private temp dir that is removed when anything is refused. ``verify``
first reads only the gate members (``Extracted(gate_only=True)``: the manifest, its signature and
signer.json, which byog writes first, kept in memory), and reads and extracts the rest only once
the signer is trusted.

Headers are parsed by hand (``parse_header``), and only one shape is read: the plain ustar header
byog writes (``archive.member_header``). Any other (pax or GNU records, sparse maps, links,
devices, fifos, folders, other metadata) is refused in one sentence; no archive library ever sees
the bytes. Refused too, each with one sentence: a file that is not byog's gzip container (one
member, the header byog writes, nothing after its trailer: ``Container``), a path that is not a
regular file (opened with O_NONBLOCK, then fstat), a gzip stream that expands past the cap (read
through a counting reader, so a bomb stops at the cap, not at the end), a member out of byog's
order (stops there), path traversal, absolute paths, names that are not plain '/'-separated
components, non-UTF-8 names, duplicate names, a name that is both a file and a folder, members
over the size cap (and over their kind's cap, ``byog.bundles.bounds.SIZE_CAPS``: a 255 MB
env.json or a 200 MB signature stops at its tar header), too many members, and trailing data.
Files are created with O_EXCL|O_NOFOLLOW under a fresh private temp dir (0700), never anywhere else.

The temp dir is named ``byog-verify-<pid>-*`` and removed on exit; one left behind by a verify
that was killed (SIGKILL leaves no chance to clean up) is removed by the next verify, once no
process of that id is alive.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import struct
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from byog.bundles.archive import (
    BLOCK,
    GATE_ORDER,
    GZIP_COMMENT_PREFIX,
    GZIP_HEADER,
    NAME_FIELD,
    PREFIX_FIELD,
    RECORD,
    UnsafeBundle,
    check_name,
    member_header,
)
from byog.bundles.bounds import size_cap
from byog.core.errors import UsageError
from byog.core.paths import MANIFEST_NAME
from byog.core.processes import process_alive

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    max_bundle_bytes: int = 64 * 1000 * 1000  # the archive file itself (budget is 25 MB)
    max_members: int = 10_000
    max_member_bytes: int = 256 * 1024 * 1024
    max_total_bytes: int = 512 * 1024 * 1024  # sum of member sizes
    max_stream_bytes: int = 520 * 1024 * 1024  # decompressed tar stream, headers and padding included


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, refused unless it is a regular file. O_NONBLOCK: a fifo (or a
    device) swapped in for the bundle between two passes must not block verify at open; fstat then
    says what was opened, whatever the path names by now."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafeBundle(f"unsafe bundle: {path.name} is not a regular file (a fifo, device or folder?)")
    return os.fdopen(fd, "rb")


class Container:
    """byog's gzip container, read in one pass: exactly the header the packer writes, one deflate
    stream, its CRC-32 and length, and nothing after them.

    ``gzip.GzipFile`` would read on through further gzip members and NUL padding without a word,
    so a "verified" file could carry bytes no signature covers (a second member's comment, a ZIP
    appended in an extra field, megabytes of padding). Here the header is parsed by hand and
    compared with ``GZIP_HEADER`` (FLG = FCOMMENT only: no FEXTRA, FNAME or FHCRC, which byog never
    writes), the comment must be exactly ``byog-sha256=<64 hex>\\0``, and after the deflate stream
    ends exactly the 8 trailer bytes may remain. ``read`` hands over the tar stream, capped at
    ``cap`` bytes (a bomb stops at the cap, not at its end).
    """

    _COMMENT_BYTES = len(GZIP_COMMENT_PREFIX) + 64 + 1

    def __init__(self, path: Path, limits: Limits) -> None:
        self.name = path.name
        self.cap = limits.max_stream_bytes
        self.handle = _open_regular(path)
        try:
            self.size = os.fstat(self.handle.fileno()).st_size
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


# What a tar header's type flag says a member is, for the one sentence that refuses it.
_KIND = {
    b"1": "a hard link",
    b"2": "a symbolic link",
    b"3": "a character device",
    b"4": "a block device",
    b"5": "a directory entry",
    b"6": "a fifo",
    b"7": "a contiguous file",
    b"x": "a pax record",
    b"g": "a pax global record",
    b"L": "a GNU long-name record",
    b"K": "a GNU long-link record",
    b"S": "a GNU sparse file",
}
_ONE_SHAPE = "byog writes one plain ustar header per file, and verify reads no other shape"
LEGACY_ORDER = (
    f"its first member is not {MANIFEST_NAME}: byog writes the manifest, its signature and signer.json first so "
    "that verify can check the signature before reading anything else; a bundle in any other order (one packed "
    "by an older byog) is read only with --allow-unsigned, which reads it all before its signature is checked"
)


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


def _header_name(block: bytes, index: int) -> str:
    """The member's path from ustar's prefix and name fields, not yet vetted."""
    base, prefix = block[:NAME_FIELD].rstrip(b"\0"), block[345 : 345 + PREFIX_FIELD].rstrip(b"\0")
    try:
        return (prefix + b"/" + base if prefix else base).decode("utf-8")
    except UnicodeDecodeError:
        raise UnsafeBundle(f"unsafe bundle: the name of member {index} is not UTF-8") from None


def parse_header(block: bytes, index: int) -> tuple[str, int]:
    """(name, size) of the one header shape byog writes, parsed by hand; anything else refused in one
    sentence. No archive library sees these bytes: they are not trusted yet."""
    if len(block) != BLOCK:
        raise UnsafeBundle(f"not a valid bundle archive: its tar stream is cut short in the header of member {index}")
    raw_name = _header_name(block, index)
    kind = block[156:157]
    if kind not in (b"0", b"\0"):
        what = _KIND.get(kind, f"of tar type {kind!r}")
        label = f"'{raw_name}'" if _plain(raw_name) else str(index)
        raise UnsafeBundle(f"unsafe bundle: member {label} is {what}, not a regular file ({_ONE_SHAPE})")
    if not raw_name:
        raise UnsafeBundle(f"not a byog archive: member {index} has no name ({_ONE_SHAPE})")
    name = check_name(raw_name)
    if not re.fullmatch(rb"[0-7]{11}\0", block[124:136]):
        raise UnsafeBundle(f"not a byog archive: member '{name}' has a size field byog never writes ({_ONE_SHAPE})")
    size = int(block[124:135], 8)
    try:
        rebuilt = member_header(name, size)
    except ValueError:
        rebuilt = b""
    if rebuilt != block:
        raise UnsafeBundle(
            f"unsafe bundle: member '{name}' has tar metadata byog never writes (mtime, owner, mode, checksum or "
            f"format: {_ONE_SHAPE})"
        )
    return name, size


def _plain(name: str) -> bool:
    try:
        check_name(name)
    except UnsafeBundle:
        return False
    return bool(name)


class _Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Member:
    """A member's data as the stream hands it over: counted, capped, hashed, and copied to disk
    (``target``) or kept in memory (``keep``: the small members the signature check reads) as it is read."""

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
            raise UnsafeBundle(f"not a valid bundle archive: member '{self.name}' is cut short")


class _HashSink:
    """Where the canonical tar stream is written: only its sha256 and length are kept."""

    def __init__(self) -> None:
        self.sha256 = hashlib.sha256()
        self.count = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.count += len(data)
        return len(data)


@dataclass
class _Scan:
    """What one pass over the archive found: member names in order, each one's sha256, the bytes of
    the members it was asked to keep, whether it read them all (a gate pass stops after the gate
    members), and how many bytes of tar stream it inflated."""

    names: list[str]
    digests: dict[str, str]
    held: dict[str, bytes]
    complete: bool = True
    stream_bytes: int = 0


_ZERO_BLOCK = bytes(BLOCK)


class _Order:
    """byog's member order: the gate members present, in GATE_ORDER, then the rest strictly sorted
    (``legacy``: every member sorted, the order of bundles packed by older byog)."""

    def __init__(self, legacy_ok: bool) -> None:
        self.legacy_ok = legacy_ok
        self.legacy = False
        self.gate_at = -1  # the index in GATE_ORDER of the last gate member seen
        self.in_gate = True
        self.last = ""

    def admit(self, name: str, first: bool) -> bool:
        """Place ``name`` in the order; True when it is a gate member. Refuses the first one out of order."""
        if first and name != GATE_ORDER[0]:
            if not self.legacy_ok:
                raise UnsafeBundle(f"not a canonical byog archive: {LEGACY_ORDER}")
            self.legacy = True
        if self.legacy:
            if name < self.last:  # an equal name is refused as a duplicate
                raise UnsafeBundle("not a canonical byog archive: members are not in sorted order")
            self.last = name
            return name in GATE_ORDER
        if name in GATE_ORDER:
            at = GATE_ORDER.index(name)
            if not self.in_gate or at < self.gate_at:
                raise UnsafeBundle(f"not a canonical byog archive: {name} is out of byog's order ({_ORDER_RULE})")
            self.gate_at = at
            return True
        if not self.in_gate and name < self.last:
            raise UnsafeBundle(f"not a canonical byog archive: '{name}' is out of byog's order ({_ORDER_RULE})")
        self.in_gate = False
        self.last = name
        return False


_ORDER_RULE = f"{', '.join(GATE_ORDER)} first, then every other member sorted by name"


class _Pass:
    """One pass over the archive: the rules every member is held to, and the canonical tar stream
    rebuilt from what they admitted."""

    def __init__(self, limits: Limits, dest: Path | None, keep: frozenset[str], legacy_ok: bool) -> None:
        self.limits = limits
        self.dest = dest
        self.keep = keep
        self.order = _Order(legacy_ok)
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
        """What no single header shows: duplicates, a file that is also a folder, the total size."""
        if name in self.seen or name in self.folders:
            raise UnsafeBundle(f"unsafe bundle: member '{name}' appears twice or is also a folder")
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
        self.canonical.write(bytes(-size % BLOCK))
        return member

    def record(self, member: _Member) -> None:
        member.require_complete()
        self.found.digests[member.name] = member.sha256.hexdigest()
        if member.kept is not None:
            self.found.held[member.name] = b"".join(member.kept)

    def end(self, stream: Container) -> None:
        """tar's end of archive (two zero blocks, zeros to a whole record), then nothing but zeros."""
        self.canonical.write(bytes(2 * BLOCK))
        self.canonical.write(bytes(-self.canonical.count % RECORD))
        while rest := stream.read(_CHUNK):
            if rest.strip(b"\0"):
                raise UnsafeBundle("unsafe bundle: data follows the end of the tar archive")


def _read_members(stream: Container, scan: _Pass, gate_only: bool) -> bool:
    """Read the archive's members, each header parsed by hand (``parse_header``); True once the end of
    the archive was read. ``gate_only`` (in byog's order) stops at the header of the first member after
    the gate members: what the signature check needs has streamed by, and nothing more is inflated."""
    while (block := stream.read(BLOCK)) != _ZERO_BLOCK:
        scan.count_one_more()
        index = len(scan.found.names) + 1
        name, size = parse_header(block, index)
        gate = scan.order.admit(name, first=index == 1)
        if gate_only and not gate and not scan.order.legacy:
            return False
        _check_size(name, size, scan.limits)
        scan.admit(name, size)
        member = scan.copy(stream, name, size)
        member.require_complete()
        padding = stream.read(-size % BLOCK)
        if len(padding) != -size % BLOCK:
            raise UnsafeBundle(f"not a valid bundle archive: its tar stream is cut short after member '{name}'")
        scan.record(member)
    scan.end(stream)
    return True


def _one_pass(
    path: Path, limits: Limits, dest: Path | None, keep: frozenset[str], gate_only: bool, legacy_ok: bool
) -> _Scan:
    scan = _Pass(limits, dest, keep, legacy_ok)
    stream = Container(path, limits)
    try:
        complete = _read_members(stream, scan, gate_only)
        if complete:
            stream.finish()
    except (OSError, zlib.error) as err:
        raise UnsafeBundle(f"{path.name} is not a valid bundle archive: {err}") from None
    finally:
        stream.close()
    scan.found.complete, scan.found.stream_bytes = complete, stream.count
    if not scan.found.names:
        raise UnsafeBundle(f"{path.name} is an empty archive")
    if complete and (scan.canonical.count != stream.count or scan.canonical.sha256.digest() != stream.sha256.digest()):
        raise UnsafeBundle(
            "not a canonical byog archive: its tar headers, padding or end blocks differ from what byog writes"
        )
    return scan.found


def scan_bundle(
    path: Path,
    limits: Limits,
    dest: Path | None,
    keep: frozenset[str] = frozenset(),
    *,
    gate_only: bool = False,
    legacy_ok: bool = False,
) -> _Scan:
    """One pass over the archive: vet every member and hash it; write it under ``dest`` (private,
    removed by the caller when this raises) unless ``dest`` is None; keep the members in ``keep``.

    While reading, the tar stream byog's packer would write for the same members (``write_tar``:
    ``member_header``, the data, zero padding, tar's end blocks) is rebuilt into a hash: every byte
    of the bundle is then either file content (covered by the manifest's hashes and the signature)
    or a header, padding or end block pinned by that comparison. No byte can change without verify
    noticing, even where tar itself would not care.
    """
    return _one_pass(path, limits, dest, keep, gate_only, legacy_ok)


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

    With ``gate_only``, entering reads only the gate members (``GATE_ORDER``: the manifest, its
    signature and signer.json, which byog writes first), keeps ``keep`` of them in memory and
    writes nothing: a bundle refused before its signer is trusted costs the inflation of a few KiB,
    whatever follows. ``extract`` then reads the whole archive and writes it; a pass that finds other
    gate members than the first one is refused (the file changed while it was being verified).

    ``legacy_order`` also admits every member sorted by name (bundles packed by older byog, whose
    manifest is not first): such a bundle is read through to its end before its signature can be
    checked, so verify allows it only with --allow-unsigned.
    """

    def __init__(
        self,
        bundle: Path,
        limits: Limits = Limits(),
        *,
        gate_only: bool = False,
        keep: frozenset[str] = frozenset(),
        legacy_order: bool = True,
    ) -> None:
        self.bundle = bundle
        self.limits = limits
        self.gate_only = gate_only
        self.keep = keep
        self.legacy_order = legacy_order
        self.root: Path | None = None
        self.names: list[str] = []
        self.digests: dict[str, str] = {}  # member name -> sha256 of its bytes, computed while reading
        self.held: dict[str, bytes] = {}  # member name -> its bytes, for the members in ``keep``
        self.complete = False  # every member read (False after a gate pass that stopped at the gate)
        self.stream_bytes = 0  # bytes of tar stream the last pass inflated
        self.written = False

    def __enter__(self) -> Extracted:
        sweep_stale_temp_dirs()
        self.root = Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{os.getpid()}-"))
        try:
            if self.gate_only:
                self._take(
                    scan_bundle(self.bundle, self.limits, None, self.keep, gate_only=True, legacy_ok=self.legacy_order)
                )
            else:
                self.extract()
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        return self

    def extract(self) -> None:
        """Write every member under ``root``; the same gate members as the first pass, or refused."""
        assert self.root is not None, "extract() runs inside the with block"
        if self.written:
            return
        scan = scan_bundle(self.bundle, self.limits, self.root, self.keep, legacy_ok=self.legacy_order)
        if self.names:
            first = self.names
            same = scan.names[: len(first)] == first and scan.held == self.held
            same = same and all(scan.digests[name] == self.digests[name] for name in first)
            if not same or (self.complete and scan.names != first):
                raise UnsafeBundle(f"unsafe bundle: {self.bundle.name} changed while it was being verified")
        self._take(scan)
        self.written = True

    def _take(self, scan: _Scan) -> None:
        self.names, self.digests, self.held = scan.names, scan.digests, scan.held
        self.complete, self.stream_bytes = scan.complete, scan.stream_bytes

    def __exit__(self, *exc: object) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
