"""member_header: byog's one tar header, built by hand. For a path of at most 100 characters it is
byte for byte the header tarfile writes (bundles packed before keep their bytes); a longer path goes
into ustar's prefix field, never a pax record; a path no split fits is refused at pack time."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from byog.bundles.archive import GATE_ORDER, archive_order, member_header, split_name, write_tar
from byog.bundles.pack import collect_files
from byog.core.errors import UsageError
from byog.core.paths import RunDir

NAMES = ["a", "plots/extra-00001.png", "x" * 100, "bench/c/decode-b1-isl16-osl16.parquet", "~ ~"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("size", [0, 1, 511, 512, 12_345_678, 8**11 - 1])
def test_a_short_name_gets_the_header_tarfile_writes(name: str, size: int) -> None:
    out = io.BytesIO()
    write_tar(out, [(name, size, io.BytesIO(b"\0" * min(size, 1)))] if size <= 1 else [])
    expected = tarfile.TarInfo(name)
    expected.size, expected.mode = size, 0o644
    assert member_header(name, size) == expected.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    if size <= 1:
        assert out.getvalue().startswith(member_header(name, size))


def test_a_long_path_goes_into_the_prefix_field_and_reads_back() -> None:
    name = "evals/" + "s" * 90 + "/" + "t" * 60 + "/items.parquet"  # 172 characters
    out = io.BytesIO()
    write_tar(out, [(name, 4, io.BytesIO(b"data"))])
    header = out.getvalue()[:512]
    assert header[156:157] == b"0" and b"PaxHeader" not in out.getvalue()  # one plain header, no pax record
    prefix, base = split_name(name)  # type: ignore[misc]
    assert len(base) <= 100 and len(prefix) <= 155 and f"{prefix}/{base}" == name
    with tarfile.open(fileobj=io.BytesIO(out.getvalue())) as tar:  # an independent reader agrees (trusted bytes)
        (member,) = tar.getmembers()
        assert member.name == name and tar.extractfile(member).read() == b"data"  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["x" * 101, "a/" + "x" * 101, "p" * 156 + "/" + "n" * 10, "café/x"])
def test_a_name_no_ustar_header_holds_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="no byog tar header holds"):
        member_header(name, 1)


def test_pack_refuses_a_path_too_long_for_the_header_in_one_sentence(tmp_path: Path) -> None:
    root = tmp_path / "run"
    deep = root / "bench" / ("s" * 120)
    deep.mkdir(parents=True)
    (deep / ("p" * 120 + ".json")).write_text("{}")
    with pytest.raises(UsageError, match=r"cannot go into a bundle: its path is 252 characters") as err:
        collect_files(RunDir(root))
    assert "\n" not in str(err.value)


def test_the_gate_members_come_first_then_the_rest_sorted() -> None:
    names = ["summary.json", "signer.json", "bench/b.json", *reversed(GATE_ORDER), "env.json"]
    assert archive_order(names) == [*GATE_ORDER, "bench/b.json", "env.json", "summary.json"]
    assert archive_order(["plan.yaml", GATE_ORDER[0]]) == [GATE_ORDER[0], "plan.yaml"]
