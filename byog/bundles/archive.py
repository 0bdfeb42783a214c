"""byog's archive format, shared by the packer and the extractor: one tar header shape per file,
a fixed member order, a self-checking gzip header, and the names a bundle may hold.

Deterministic: regular files only, one plain ustar header each (mtime 0, uid/gid 0, empty
uname/gname, mode 0644; a path over 100 characters split at a '/' into ustar's prefix field, never
a pax or GNU record), the gate members first (``GATE_ORDER``), then the rest sorted; gzip with
mtime 0 and no file name. The same files give the same bytes, and verify reads no other shape.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import struct
import zlib
from collections.abc import Iterable
from typing import BinaryIO

from byog.core.errors import CheckFailed
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME, SIGNER_NAME

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


BLOCK = 512  # a tar block
RECORD = 20 * BLOCK  # tar pads its end to a whole record of 20 blocks
NAME_FIELD = 100  # ustar's name field
PREFIX_FIELD = 155  # ustar's prefix field: a longer path is split at a '/' into prefix and name
MAX_NAME = PREFIX_FIELD + 1 + NAME_FIELD
# The archive's order: the gate members first (what verify reads before the signer is known, so it
# can stop there), then every other member sorted by name.
GATE_ORDER = (MANIFEST_NAME, SIGNATURE_NAME, SIGNER_NAME)


def archive_order(names: Iterable[str]) -> list[str]:
    """The order byog writes members in: the gate members present, in GATE_ORDER, then the rest sorted."""
    present = set(names)
    return [name for name in GATE_ORDER if name in present] + sorted(present - set(GATE_ORDER))


def split_name(name: str) -> tuple[str, str] | None:
    """(prefix, name) for ustar's two fields: the shortest prefix that leaves at most 100 characters, or None
    when no '/' splits the path into fields that fit (it is then too long for a bundle)."""
    if len(name) <= NAME_FIELD:
        return "", name
    for at in range(len(name) - NAME_FIELD - 1, min(len(name), PREFIX_FIELD + 1)):
        if at >= 1 and name[at] == "/":
            return name[:at], name[at + 1 :]
    return None


def _template() -> bytearray:
    """The fields every byog header shares: mode 0644, owner 0, mtime 0, a regular file, ustar magic, no names."""
    header = bytearray(BLOCK)
    header[100:108] = b"%07o\0" % FILE_MODE
    header[108:116] = header[116:124] = b"0000000\0"
    header[136:148] = b"00000000000\0"
    header[156:157] = b"0"
    header[257:265] = b"ustar\x0000"
    return header


_TEMPLATE = bytes(_template())
MAX_MEMBER_SIZE = 8**11 - 1  # what the 11 octal digits of the size field hold


def member_header(name: str, size: int) -> bytes:
    """The one tar header byog writes for a file: byog's ustar template with the name (split into prefix
    and name past 100 characters), the size and the checksum filled in. Raises ValueError for a name
    that is not ASCII or does not fit, or a size over the field; ``check_name`` and ``split_name`` say why
    first, where it matters."""
    fields = split_name(name)
    if fields is None or not name.isascii() or not 0 <= size <= MAX_MEMBER_SIZE:
        raise ValueError(f"no byog tar header holds {name!r} of {size} bytes")
    prefix, base = fields
    header = bytearray(_TEMPLATE)
    header[0:NAME_FIELD] = base.encode("ascii").ljust(NAME_FIELD, b"\0")
    header[124:136] = b"%011o\0" % size
    header[345 : 345 + PREFIX_FIELD] = prefix.encode("ascii").ljust(PREFIX_FIELD, b"\0")
    header[148:156] = b"        "
    header[148:155] = b"%06o\0" % sum(header)
    return bytes(header)


def write_tar(sink: BinaryIO, members: Iterable[tuple[str, int, BinaryIO]]) -> None:
    """Write (name, size, data) members, in the order given, as byog's uncompressed tar stream: one
    ``member_header`` per file, its data, zeros to a whole block; then two zero blocks and zeros to a
    whole record (tar's end of archive)."""
    written = 0
    for name, size, data in members:
        sink.write(member_header(name, size))
        left = size
        while left > 0:
            chunk = data.read(min(left, 1 << 20))
            if not chunk:
                raise ValueError(f"{name} is shorter than its {size} bytes")
            sink.write(chunk)
            left -= len(chunk)
        sink.write(bytes(-size % BLOCK))
        written += BLOCK + size + (-size % BLOCK)
    written += 2 * BLOCK
    sink.write(bytes(2 * BLOCK + (-written % RECORD)))


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
