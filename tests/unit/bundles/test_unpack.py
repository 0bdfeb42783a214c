"""The pre-signature pass: byog's plain tar headers read by hand, every other archive by tarfile
with the same refusals, and no file written before the signer is trusted."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from byog.bundles import unpack
from byog.bundles.archive import UnsafeBundle, bundle_gzip, member_info
from byog.bundles.unpack import Extracted, Limits, _NotPlain, _one_pass, _scan
from byog.bundles.verify import GATE_MEMBERS, verify_bundle
from byog.core.paths import MANIFEST_NAME
from tests.support.hostile import Kit
from tests.unit.bundles.test_hostile import CORPUS, SMALL


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    return Kit.create(tmp_path_factory.mktemp("unpack"))


def _bundle(path: Path, members: dict[str, bytes]) -> Path:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tar:
        for name in sorted(members):
            tar.addfile(member_info(name, len(members[name])), io.BytesIO(members[name]))
    path.write_bytes(bundle_gzip(raw.getvalue()))
    return path


def _refusal(run: object) -> str:
    with pytest.raises(UnsafeBundle) as err:
        run()  # type: ignore[operator]
    return str(err.value)


@pytest.mark.parametrize("kind", sorted(CORPUS))
def test_every_hostile_archive_is_refused_in_tarfiles_words(kind: str, tmp_path: Path) -> None:
    bundle = tmp_path / "hostile.tar.gz"
    bundle.write_bytes(CORPUS[kind][0])
    by_tarfile = _refusal(lambda: _one_pass(bundle, SMALL, None, frozenset(), plain=False))
    assert _refusal(lambda: _scan(bundle, SMALL, None)) == by_tarfile


def test_plain_names_are_read_by_hand_and_a_pax_name_by_tarfile(tmp_path: Path) -> None:
    plain = {"a.json": b"{}", "plots/b.png": b"x" * 700, "z": b""}
    bundle = _bundle(tmp_path / "plain.tar.gz", plain)
    found = _one_pass(bundle, Limits(), None, frozenset({"a.json"}), plain=True)  # no _NotPlain: all by hand
    assert found == _one_pass(bundle, Limits(), None, frozenset({"a.json"}), plain=False)
    assert found.digests == {name: hashlib.sha256(data).hexdigest() for name, data in plain.items()}
    assert found.held == {"a.json": b"{}"}

    long_name = "evals/" + "x" * 120 + ".parquet"  # over ustar's 100 characters: a pax record
    mixed = _bundle(tmp_path / "mixed.tar.gz", {**plain, long_name: b"data"})
    with pytest.raises(_NotPlain):
        _one_pass(mixed, Limits(), None, frozenset(), plain=True)
    dest = tmp_path / "out"
    dest.mkdir()
    found = _scan(mixed, Limits(), dest)  # the hand reader wrote a.json before the pax header: written once
    assert found.names == sorted([*plain, long_name])
    assert (dest / long_name).read_bytes() == b"data" and (dest / "plots" / "b.png").read_bytes() == b"x" * 700


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


def test_the_first_pass_holds_the_gate_members_and_writes_nothing(kit: Kit) -> None:
    with Extracted(kit.folder / "base.tar.gz", deferred=True, keep=GATE_MEMBERS) as extracted:
        assert extracted.root is not None and list(extracted.root.iterdir()) == []
        assert set(extracted.held) == GATE_MEMBERS & set(extracted.names)
        assert MANIFEST_NAME in extracted.held and len(extracted.digests) == len(extracted.names)
        extracted.extract()
        assert (extracted.root / MANIFEST_NAME).read_bytes() == extracted.held[MANIFEST_NAME]


def test_a_bundle_changed_between_the_two_passes_is_refused(kit: Kit, tmp_path: Path) -> None:
    bundle = tmp_path / "swapped.tar.gz"
    bundle.write_bytes((kit.folder / "base.tar.gz").read_bytes())
    other = kit.forge("other", {"plots/extra.png": b"x"})
    with Extracted(bundle, deferred=True, keep=GATE_MEMBERS) as extracted:
        bundle.write_bytes(other.read_bytes())  # a valid bundle too, but not the one the first pass vetted
        assert "changed while it was being verified" in _refusal(extracted.extract)


def test_one_member_over_the_count_cap_is_refused_on_the_count(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "many.tar.gz", {f"m{i:02d}": b"x" for i in range(21)})
    assert _refusal(lambda: _scan(bundle, SMALL, None)) == "unsafe bundle: more than 20 members"
