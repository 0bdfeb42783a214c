"""A corpus of hostile archives, one per kind verify must refuse before it reads anything.

Each is rejected with one line (the 'archive' check), exit 1 from the CLI, no traceback, no
file written outside a private temp dir, and no temp dir left behind.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.bundles.archive import bundle_gzip, gzip_bytes
from byog.bundles.verify import verify_bundle
from byog.cli import app
from tests.support.hostile import SMALL, member_info


def _tar(build: Callable[[tarfile.TarFile], None], *, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt, encoding="utf-8", errors="surrogateescape") as tar:
        build(tar)
    return raw.getvalue()


def _file(tar: tarfile.TarFile, name: str, data: bytes = b"x") -> None:
    tar.addfile(member_info(name, len(data)), io.BytesIO(data))


def _special(tar: tarfile.TarFile, name: str, kind: bytes, linkname: str = "") -> None:
    info = member_info(name, 0)
    info.type = kind
    info.linkname = linkname
    tar.addfile(info)


def _hostile() -> dict[str, tuple[bytes, str]]:
    """kind -> (archive bytes, a word the one-line refusal must contain)."""
    gz = bundle_gzip  # byog's own container: each archive fails on the rule it breaks, not on the header
    return {
        "path traversal": (gz(_tar(lambda t: _file(t, "../evil-traversal"))), "traversal"),
        "nested traversal": (gz(_tar(lambda t: _file(t, "plots/../../evil-nested"))), "traversal"),
        "absolute path": (gz(_tar(lambda t: _file(t, "/tmp/evil-absolute"))), "absolute"),
        "drive letter": (gz(_tar(lambda t: _file(t, "C:/evil-drive"))), "absolute"),
        "backslash name": (gz(_tar(lambda t: _file(t, "..\\evil-backslash"))), "plain relative path"),
        "symlink": (gz(_tar(lambda t: _special(t, "link", tarfile.SYMTYPE, "/etc/passwd"))), "symbolic link"),
        "hardlink": (
            gz(_tar(lambda t: (_file(t, "a"), _special(t, "b", tarfile.LNKTYPE, "/etc/passwd")))),
            "hard link",
        ),
        "character device": (gz(_tar(lambda t: _special(t, "dev", tarfile.CHRTYPE))), "character device"),
        "block device": (gz(_tar(lambda t: _special(t, "blk", tarfile.BLKTYPE))), "block device"),
        "fifo": (gz(_tar(lambda t: _special(t, "pipe", tarfile.FIFOTYPE))), "fifo"),
        "directory entry": (gz(_tar(lambda t: _special(t, "folder", tarfile.DIRTYPE))), "directory"),
        "member over the size cap": (gz(_tar(lambda t: _file(t, "big", b"\0" * 5000))), "cap"),
        "total over the cap": (gz(_tar(lambda t: [_file(t, f"f{i:02d}", b"\0" * 4000) for i in range(5)])), "add up"),
        "gzip bomb": (gz(b"\0" * 20_000_000), "expands past"),
        "too many members": (gz(_tar(lambda t: [_file(t, f"m{i:02d}") for i in range(25)])), "more than 20 members"),
        "duplicate names": (gz(_tar(lambda t: (_file(t, "dup"), _file(t, "dup")))), "twice"),
        "file and folder": (gz(_tar(lambda t: (_file(t, "a"), _file(t, "a/b")))), "both a file and a folder"),
        "non-UTF-8 name": (gz(_tar(lambda t: _file(t, "caf\udce9"), fmt=tarfile.GNU_FORMAT)), "not UTF-8"),
        "pax path override": (
            gz(_tar(lambda t: t.addfile(_pax_info("ok", {"path": "../evil-pax"}), io.BytesIO(b"x")))),
            "pax record",
        ),
        "not gzip": (_tar(lambda t: _file(t, "plain")), "gzip header"),
        "plain gzip": (gzip_bytes(_tar(lambda t: _file(t, "x"))), "gzip header"),
        "foreign gzip header": (b"\x1f\x8b\x08\x08" + gz(_tar(lambda t: _file(t, "x")))[4:], "gzip header"),
        "trailing data": (gz(_tar(lambda t: _file(t, "x"))) + b"garbage", "follows the end of the gzip stream"),
        "trailing gzip member, checksum updated": (
            _rehashed(gz(_tar(lambda t: _file(t, "x"))) + gzip_bytes(b"\1" * 512)),
            "follows the end of the gzip stream",
        ),
        "trailing NULs, checksum updated": (
            _rehashed(gz(_tar(lambda t: _file(t, "x"))) + b"\0" * 4096),
            "follows the end of the gzip stream",
        ),
        "empty second gzip member carrying a comment, checksum updated": (
            _rehashed(gz(_tar(lambda t: _file(t, "x"))) + _empty_member(0x10, b"unsigned words\0")),
            "follows the end of the gzip stream",
        ),
        "ZIP polyglot in a second member's extra field, checksum updated": (
            _rehashed(gz(_tar(lambda t: _file(t, "x"))) + _empty_member(0x04, _extra_field(_zip()))),
            "follows the end of the gzip stream",
        ),
        "FNAME in the gzip header": (
            _with_flags(gz(_tar(lambda t: _file(t, "x"))), 0x18, b"x" * 4096 + b"\0"),
            "gzip header",
        ),
        "FEXTRA in the gzip header": (
            _with_flags(gz(_tar(lambda t: _file(t, "x"))), 0x14, _extra_field(b"x" * 64)),
            "gzip header",
        ),
        "FHCRC in the gzip header": (_with_flags(gz(_tar(lambda t: _file(t, "x"))), 0x12, b""), "gzip header"),
        "data after the tar end": (gz(_tar(lambda t: _file(t, "x")) + b"\1" * 512), "follows the end"),
        "empty archive": (gz(_tar(lambda t: None)), "empty"),
        "truncated": (gz(_tar(lambda t: _file(t, "x", b"y" * 3000)))[:-40], "cut short"),
        "trailer cut short, checksum updated": (_rehashed(gz(_tar(lambda t: _file(t, "x")))[:-3]), "cut short"),
        "body changed, checksum kept": (
            _flip_last_deflate_byte(gz(_tar(lambda t: _file(t, "x")))),
            "not a valid bundle archive",
        ),
        "truncated, checksum updated": (
            _rehashed(gz(_tar(lambda t: _file(t, "x", b"y" * 3000)))[:-40]),
            "not a valid bundle archive",
        ),
    }


def _rehashed(data: bytes) -> bytes:
    """Recompute the header's sha256 so the archive fails on its content, not on its checksum."""
    import hashlib

    return data[:22] + hashlib.sha256(data[87:]).hexdigest().encode() + data[86:]


def _empty_member(flags: int, field: bytes) -> bytes:
    """A gzip member with no data: header with ``flags`` and its ``field``, an empty deflate block, CRC 0, length 0."""
    return bytes([0x1F, 0x8B, 0x08, flags, 0, 0, 0, 0, 0, 0xFF]) + field + b"\x03\x00" + b"\0" * 8


def _extra_field(data: bytes) -> bytes:
    return len(data).to_bytes(2, "little") + data


def _zip() -> bytes:
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("payload.sh", "echo unsigned\n")
    return out.getvalue()


def _with_flags(data: bytes, flags: int, field: bytes) -> bytes:
    """byog's archive with FLG changed and ``field`` (FNAME, FEXTRA) before its comment."""
    return data[:3] + bytes([flags]) + data[4:10] + field + data[10:]


def _flip_last_deflate_byte(data: bytes) -> bytes:
    return data[:-9] + bytes([data[-9] ^ 0x55]) + data[-8:]


def _pax_info(name: str, headers: dict[str, str]) -> tarfile.TarInfo:
    info = member_info(name, 1)
    info.pax_headers = headers
    return info


CORPUS = _hostile()


@pytest.mark.parametrize("kind", sorted(CORPUS))
def test_hostile_archive_is_refused_in_one_line(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, word = CORPUS[kind]
    work = tmp_path / "cwd"
    work.mkdir()
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    bundle = tmp_path / "hostile.tar.gz"
    bundle.write_bytes(data)

    report = verify_bundle(bundle, allow_unsigned=True, limits=SMALL)

    assert not report.verified
    assert [r.name for r in report.results] == ["archive"]
    message = report.results[0].message
    assert word in message and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "hostile.tar.gz", "tmp"]
    assert list(work.iterdir()) == [] and list(private_tmp.iterdir()) == []  # nothing written, no temp dir left
    assert not Path("/tmp/evil-absolute").exists()


def test_cli_refuses_hostile_archives_with_exit_1_and_no_traceback(tmp_path: Path) -> None:
    runner = CliRunner()
    for kind in ("path traversal", "symlink", "gzip bomb", "not gzip"):
        bundle = tmp_path / f"{kind.replace(' ', '-')}.tar.gz"
        bundle.write_bytes(CORPUS[kind][0])
        result = runner.invoke(app, ["verify", str(bundle), "--allow-unsigned"])
        assert result.exit_code == 1, (kind, result.output)
        assert "Traceback" not in result.output
        fails = [line for line in result.output.splitlines() if line.startswith("FAIL")]
        assert len(fails) == 1 and fails[0].startswith("FAIL archive:"), result.output


def test_default_limits_stop_a_bomb_without_reading_it_all(tmp_path: Path) -> None:
    """600 MB of zeros (~600 KB compressed, in byog's own container) stops at the default cap."""
    import hashlib
    import struct
    import zlib

    from byog.bundles.archive import GZIP_COMMENT_PREFIX, GZIP_HEADER

    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    chunk, crc, body = b"\0" * 1_000_000, 0, []
    for _ in range(600):
        body.append(compressor.compress(chunk))
        crc = zlib.crc32(chunk, crc)
    body.append(compressor.flush() + struct.pack("<II", crc, 600_000_000))
    payload = b"".join(body)
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(GZIP_HEADER + GZIP_COMMENT_PREFIX + hashlib.sha256(payload).hexdigest().encode() + b"\0" + payload)
    report = verify_bundle(bomb, allow_unsigned=True)
    assert "expands past" in report.results[0].message
    assert os.path.getsize(bomb) < 1_000_000
