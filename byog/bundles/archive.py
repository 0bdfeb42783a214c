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
