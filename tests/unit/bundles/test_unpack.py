"""The pre-signature pass: byog's one header shape read by hand and nothing else (no archive
library sees an untrusted byte), the gate members first, nothing more read or written before the
signer is trusted, and a bundle swapped between the two passes refused."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
from pathlib import Path

import pytest

from byog.bundles import unpack
from byog.bundles.archive import GATE_ORDER, UnsafeBundle, bundle_gzip, member_header
from byog.bundles.unpack import Extracted, Limits, scan_bundle
from byog.bundles.verify import GATE_MEMBERS, verify_bundle
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME, SIGNER_NAME
from tests.support.hostile import SMALL, Kit, Payload, member_info


def _raw(members: list[tuple[str, bytes]]) -> bytes:
    """A tar stream of byog's headers in the order given (no end blocks padding rules broken)."""
    out = io.BytesIO()
    for name, data in members:
        out.write(member_header(name, len(data)) + data + bytes(-len(data) % 512))
    out.write(bytes(1024))
    out.write(bytes(-out.tell() % 10240))
    return out.getvalue()


def _with_tarfile(build: object, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tar:
        build(tar)  # type: ignore[operator]
    return raw.getvalue()


def _refusal(run: object) -> str:
    with pytest.raises(UnsafeBundle) as err:
        run()  # type: ignore[operator]
    return str(err.value)


def _no_tarfile(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tarfile parsed an untrusted bundle")

    monkeypatch.setattr(tarfile, "open", refuse)
    monkeypatch.setattr(tarfile.TarFile, "__init__", refuse)
    monkeypatch.setattr(tarfile.TarInfo, "frombuf", refuse)


def _pax_member(tar: tarfile.TarFile, headers: dict[str, str]) -> None:
    info = member_info("a", 1)
    info.pax_headers = headers
    tar.addfile(info, io.BytesIO(b"x"))


def _sparse_member(tar: tarfile.TarFile) -> None:
    info = member_info("a", 0)
    info.type = tarfile.GNUTYPE_SPARSE
    tar.addfile(info)


FOREIGN = {
    "pax record": (lambda t: _pax_member(t, {"path": "a"}), tarfile.PAX_FORMAT, "is a pax record"),
    "pax record of a long name": (
        lambda t: t.addfile(member_info("evals/" + "x" * 120, 1), io.BytesIO(b"x")),
        tarfile.PAX_FORMAT,
        "is a pax record",
    ),
    "GNU sparse map in a pax record": (
        lambda t: _pax_member(t, {"GNU.sparse.map": "x,y", "GNU.sparse.size": "9"}),
        tarfile.PAX_FORMAT,
        "is a pax record",
    ),
    "GNU sparse file": (_sparse_member, tarfile.GNU_FORMAT, "is a GNU sparse file"),
    "GNU long name": (
        lambda t: t.addfile(member_info("x" * 120, 1), io.BytesIO(b"x")),
        tarfile.GNU_FORMAT,
        "is a GNU long-name record",
    ),
    "GNU magic": (lambda t: t.addfile(member_info("a", 1), io.BytesIO(b"x")), tarfile.GNU_FORMAT, "metadata"),
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_foreign_header_is_refused_in_one_sentence_without_tarfile(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build, fmt, says = FOREIGN[kind]
    bundle = tmp_path / "foreign.tar.gz"
    bundle.write_bytes(bundle_gzip(_with_tarfile(build, fmt)))
    _no_tarfile(monkeypatch)
    for allow_unsigned in (False, True):
        report = verify_bundle(bundle, allow_unsigned=allow_unsigned)
        assert [(r.name, r.status) for r in report.results] == [("archive", "fail")]
        message = report.results[0].message
        assert says in message and "\n" not in message and "one plain ustar header" in message


@pytest.mark.parametrize("size", [236, 250, 280])
def test_tiny_malformed_archives_get_a_verdict_not_an_exception(size: int, tmp_path: Path) -> None:
    """A few hundred bytes: a header cut short, or a sparse map tarfile's int() choked on."""
    sparse = _with_tarfile(lambda t: _pax_member(t, {"GNU.sparse.map": "1,x", "GNU.sparse.size": "9"}))
    for name, raw in {"cut": member_header("a", 5)[:size], "sparse": sparse[:size]}.items():
        bundle = tmp_path / f"{name}.tar.gz"
        bundle.write_bytes(bundle_gzip(raw))
        report = verify_bundle(bundle, allow_unsigned=True)
        assert [(r.name, r.status) for r in report.results] == [("archive", "fail")], name
        assert "\n" not in report.results[0].message


def test_the_packer_writes_the_gate_members_first(kit: Kit) -> None:
    with tarfile.open(kit.folder / "base.tar.gz") as tar:  # our own bundle: trusted bytes
        names = tar.getnames()
    assert names[:3] == list(GATE_ORDER) and names[3:] == sorted(names[3:])


def test_members_out_of_byogs_order_are_refused_at_the_first_one(tmp_path: Path) -> None:
    cases = {
        "rest unsorted": [(MANIFEST_NAME, b"{}"), ("b", b""), ("a", b"")],
        "signer.json after the rest": [(MANIFEST_NAME, b"{}"), (SIGNATURE_NAME, b"s"), ("a", b""), (SIGNER_NAME, b"")],
        "signature after signer.json": [(MANIFEST_NAME, b"{}"), (SIGNER_NAME, b""), (SIGNATURE_NAME, b"s")],
    }
    for what, members in cases.items():
        bundle = tmp_path / "order.tar.gz"
        bundle.write_bytes(bundle_gzip(_raw(members)))
        assert "is out of byog's order" in _refusal(lambda path=bundle: scan_bundle(path, SMALL, None)), what


def test_a_bundle_without_its_manifest_first_is_read_only_with_allow_unsigned(tmp_path: Path) -> None:
    bundle = tmp_path / "sorted.tar.gz"
    bundle.write_bytes(bundle_gzip(_raw([("a", b"x"), (MANIFEST_NAME, b"{}")])))
    report = verify_bundle(bundle)
    assert [(r.name, r.status) for r in report.results] == [("archive", "fail")]
    assert "first member is not manifest.intoto.json" in report.results[0].message
    assert "--allow-unsigned" in report.results[0].message
    assert [r.name for r in verify_bundle(bundle, allow_unsigned=True).results][:2] == ["archive", "manifest"]


def test_an_unsigned_big_bundle_is_refused_after_inflating_only_its_manifest(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = Payload(unit=bytes(range(256)) * 16, count=320)  # 1.3 MB behind the manifest
    bundle = kit.forge("unsigned-big", {"bench/baseline/zz.parquet": big, SIGNATURE_NAME: None, SIGNER_NAME: None})
    inflated: list[int] = []
    real_read = unpack.Container.read

    def counting(self: unpack.Container, size: int = -1) -> bytes:
        data = real_read(self, size)
        inflated.append(len(data))
        return data

    monkeypatch.setattr(unpack.Container, "read", counting)
    report = verify_bundle(bundle)
    assert report.trust == "untrusted" and "unsigned" in " ".join(report.failures)
    manifest_size = len(_member(bundle, MANIFEST_NAME))
    gate_bytes = 512 + manifest_size + (-manifest_size % 512) + 512  # its header, data, padding; the next header
    assert sum(inflated) == gate_bytes
    assert {r.name: r.status for r in report.results}["hashes"] == "skip"


def _member(bundle: Path, name: str) -> bytes:
    with tarfile.open(bundle) as tar:  # the test's own bundle
        return tar.extractfile(name).read()  # type: ignore[union-attr]


def test_an_untrusted_bundle_is_refused_without_writing_a_file(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = kit.forge("stranger", {}, trusted=False)
    opened: list[str] = []
    real_open = unpack.os.open

    def spy(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if "byog-verify-" in str(path) and flags & os.O_CREAT:  # a file created in verify's temp dir
            opened.append(str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(unpack.os, "open", spy)

    report = verify_bundle(bundle, allowed_signers=kit.allowed)
    assert report.trust == "untrusted" and not report.verified
    assert opened == []
    trusted = verify_bundle(kit.folder / "base.tar.gz", allowed_signers=kit.allowed)
    assert trusted.verified and opened  # the spy does see the files a trusted bundle's extraction writes


def test_the_gate_pass_holds_the_gate_members_and_writes_nothing(kit: Kit) -> None:
    with Extracted(kit.folder / "base.tar.gz", gate_only=True, keep=GATE_MEMBERS) as extracted:
        assert extracted.root is not None and list(extracted.root.iterdir()) == []
        assert extracted.names == list(GATE_ORDER) and set(extracted.held) == GATE_MEMBERS
        assert not extracted.complete
        extracted.extract()
        assert extracted.complete and len(extracted.digests) == len(extracted.names) > 3
        assert (extracted.root / MANIFEST_NAME).read_bytes() == extracted.held[MANIFEST_NAME]


def test_a_bundle_changed_between_the_two_passes_is_refused(kit: Kit, tmp_path: Path) -> None:
    bundle = tmp_path / "swapped.tar.gz"
    bundle.write_bytes((kit.folder / "base.tar.gz").read_bytes())
    other = kit.forge("other", {"plots/extra.png": b"x"})
    with Extracted(bundle, gate_only=True, keep=GATE_MEMBERS) as extracted:
        bundle.write_bytes(other.read_bytes())  # a valid bundle too, but not the one the first pass vetted
        assert "changed while it was being verified" in _refusal(extracted.extract)


def test_a_fifo_swapped_in_between_the_two_passes_is_refused_without_blocking(kit: Kit, tmp_path: Path) -> None:
    bundle = tmp_path / "fifo.tar.gz"
    bundle.write_bytes((kit.folder / "base.tar.gz").read_bytes())
    outcome: list[str] = []
    with Extracted(bundle, gate_only=True, keep=GATE_MEMBERS) as extracted:
        bundle.unlink()
        os.mkfifo(bundle)

        def second_pass() -> None:
            try:
                extracted.extract()
            except UnsafeBundle as err:
                outcome.append(str(err))

        worker = threading.Thread(target=second_pass, daemon=True)
        worker.start()
        worker.join(20)
        blocked = worker.is_alive()
        if blocked:  # let the blocked open return, so the test run can end
            os.close(os.open(bundle, os.O_WRONLY | os.O_NONBLOCK))
            worker.join(5)
    assert not blocked, "the second pass blocked on a fifo"
    assert outcome == ["unsafe bundle: fifo.tar.gz is not a regular file (a fifo, device or folder?)"]


def test_one_member_over_the_count_cap_is_refused_on_the_count(tmp_path: Path) -> None:
    bundle = tmp_path / "many.tar.gz"
    bundle.write_bytes(bundle_gzip(_raw([(MANIFEST_NAME, b"{}"), *((f"m{i:02d}", b"x") for i in range(20))])))
    assert _refusal(lambda: scan_bundle(bundle, SMALL, None)) == "unsafe bundle: more than 20 members"


def test_the_hand_reader_hashes_and_keeps_what_it_is_asked_to(tmp_path: Path) -> None:
    plain = {MANIFEST_NAME: b"{}", "a.json": b"{}", "plots/b.png": b"x" * 700, "z": b""}
    bundle = tmp_path / "plain.tar.gz"
    bundle.write_bytes(bundle_gzip(_raw(list(plain.items()))))
    found = scan_bundle(bundle, Limits(), None, frozenset({"a.json"}))
    assert found.complete and found.names == list(plain)
    assert found.digests == {name: hashlib.sha256(data).hexdigest() for name, data in plain.items()}
    assert found.held == {"a.json": b"{}"}
