"""byog's archive format, shared by the packer and the extractor: one tar header per file, a
self-checking gzip header, and the names a bundle may hold.

Deterministic: regular files only, mtime 0, uid/gid 0, empty uname/gname, mode 0644, gzip with
mtime 0 and no file name, so the same files give the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import struct
import tarfile
import zlib
from collections.abc import Iterable
from typing import BinaryIO

from byog.core.errors import CheckFailed

GZIP_LEVEL = 9
# The fixed part of the gzip header byog writes: magic, deflate, FLG = FCOMMENT, mtime 0, XFL 2
# (level 9), OS 255. The comment that follows is "byog-sha256=<hex>": the sha256 of every byte
# after it (deflate data + CRC-32 + length). Deflate has redundant encodings (a flipped byte can
# decode to the same tar), so gzip's CRC alone cannot prove the archive is byte-for-byte as packed.
GZIP_HEADER = bytes([0x1F, 0x8B, 0x08, 0x10, 0, 0, 0, 0, 0x02, 0xFF])
GZIP_COMMENT_PREFIX = b"byog-sha256="
FILE_MODE = 0o644


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


def _slow_header(name: str, size: int) -> bytes:
    return member_info(name, size).tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


_TEMPLATE = bytearray(_slow_header("", 0))  # name and size empty: the bytes every member header shares
_SIMPLE_NAME = re.compile(r"[\x20-\x7e]{1,100}")  # what tar's ustar header holds without a pax record


def member_header(name: str, size: int) -> bytes:
    """The tar header bytes ``write_tar`` writes for a member (pax record included, when one is needed).

    An ASCII name of at most 100 characters and a size under 8 GiB fill byog's one ustar template
    (name, size and checksum spliced in), which costs microseconds instead of tarfile's tens of
    them: verify rebuilds one header per member, of up to 10,000. Anything else goes through tarfile.
    """
    if not _SIMPLE_NAME.fullmatch(name) or size >= 8**11:
        return _slow_header(name, size)
    header = bytearray(_TEMPLATE)
    header[0:100] = name.encode("ascii").ljust(100, b"\0")
    header[124:136] = b"%011o\0" % size
    header[148:156] = b"        "
    header[148:155] = b"%06o\0" % sum(header)
    return bytes(header)


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


_COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


class UnsafeBundle(CheckFailed):
    """The archive breaks a safety rule; nothing from it is trusted or kept."""


def check_name(name: str) -> str:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafeBundle(f"unsafe bundle: member name {name!r} is not UTF-8") from None
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise UnsafeBundle(f"unsafe bundle: member '{name}' has an absolute path")
    parts = name.split("/")
    if ".." in parts:
        raise UnsafeBundle(f"unsafe bundle: member '{name}' climbs out of the bundle (path traversal)")
    if not all(_COMPONENT.match(part) for part in parts):
        raise UnsafeBundle(f"unsafe bundle: member name {name!r} is not a plain relative path")
    return name
