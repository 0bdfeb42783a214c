"""member_header: verify's fast rebuild of a tar header gives exactly the bytes tarfile writes."""

from __future__ import annotations

import io
import tarfile

import pytest

from byog.bundles.archive import member_header, write_tar

NAMES = ["a", "plots/extra-00001.png", "x" * 100, "x" * 101, "café/x", "bench/c/decode-b1-isl16-osl16.parquet", "~ ~"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("size", [0, 1, 511, 512, 12_345_678, 8**11 - 1, 8**11])
def test_member_header_is_the_header_write_tar_writes(name: str, size: int) -> None:
    out = io.BytesIO()
    write_tar(out, [(name, size, io.BytesIO(b"\0" * min(size, 1)))] if size <= 1 else [])
    expected = tarfile.TarInfo(name)
    expected.size, expected.mode = size, 0o644
    tarfile_bytes = expected.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    assert member_header(name, size) == tarfile_bytes
    if size <= 1:
        assert out.getvalue().startswith(member_header(name, size))
