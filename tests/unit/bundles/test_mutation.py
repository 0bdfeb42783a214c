"""Every single-byte change to a signed bundle fails verify (in-process, not the CLI, to stay fast).

The flip of every byte of the bundle checks signatures with byog's Python backend: with ssh-keygen
each of the ~10,000 mutants would cost two ssh-keygen runs, most of them on an untouched manifest
and signature (the flip lies past them) that both backends accept alike
(tests/unit/bundles/test_sshsig.py shows they give the same answers). Where the backends could
differ, in reading a changed signature, the tar test below flips every byte of the signature with
ssh-keygen itself.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
from pathlib import Path

import pytest

from byog.bundles.archive import bundle_gzip
from byog.bundles.verify import verify_bundle
from byog.core.settings import SSH_BACKEND_ENV
from tests.support.bundles_kit import build_bundle
from tests.support.keys import allowed_signers, make_key


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path]:
    folder = tmp_path_factory.mktemp("mutation")
    key, public = make_key(folder, "alice")
    _, packed = build_bundle(folder, key)
    allowed = allowed_signers(folder / "allowed_signers", [("alice@example.com", public)])
    return packed.bundle.read_bytes(), allowed


SHM = Path("/dev/shm")


@pytest.fixture(autouse=True)
def _temp_on_tmpfs(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify's temp dirs (each mutant that passes the gate is extracted, then removed) on tmpfs
    when the machine has it: the same extraction, without the disk's ~1 ms per mkdir, write and rmdir."""
    if SHM.is_dir():
        monkeypatch.setattr(tempfile, "tempdir", str(SHM))


def _scratch(tmp_path: Path) -> Path:
    # Thousands of writes: tmpfs when the machine has it (the disk here takes ~1 ms per write). The
    # name is the test's own: pytest-xdist runs tests of other modules beside it.
    return (SHM if SHM.is_dir() else tmp_path) / f"byog-mutant-{os.getpid()}-{tmp_path.name}.tar.gz"


def _verdicts(mutants: list[tuple[int, bytes]], allowed: Path, target: Path) -> tuple[list[int], int]:
    survivors = []
    try:
        for offset, mutant in mutants:
            target.write_bytes(mutant)
            report = verify_bundle(target, allowed_signers=allowed)
            if report.verified:
                survivors.append(offset)
    finally:
        target.unlink(missing_ok=True)
    return survivors, len(mutants)


def test_the_unmodified_bundle_verifies(signed: tuple[bytes, Path], tmp_path: Path) -> None:
    data, allowed = signed
    survivors, _ = _verdicts([(-1, data)], allowed, _scratch(tmp_path))
    assert survivors == [-1]


def test_flipping_any_byte_of_the_bundle_fails_verify(
    signed: tuple[bytes, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SSH_BACKEND_ENV, "python")
    data, allowed = signed
    assert len(data) > 4000, "the bundle should be a few KB at least"
    mutants = []
    for offset in range(len(data)):
        mutant = bytearray(data)
        mutant[offset] ^= 0xFF
        mutants.append((offset, bytes(mutant)))
    survivors, tried = _verdicts(mutants, allowed, _scratch(tmp_path))
    print(f"flipped {tried} of {len(data)} bytes one at a time: {tried - len(survivors)} rejected")
    assert survivors == []


def test_flipping_bytes_of_the_tar_inside_fails_verify(
    signed: tuple[bytes, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-gzipped (new CRC and header sha256) so only the tar's own checks can catch it: headers, padding and content
    are all pinned. Signatures are checked by ssh-keygen, as on a maintainer's machine."""
    monkeypatch.setenv(SSH_BACKEND_ENV, "ssh-keygen")
    data, allowed = signed
    tar = gzip.decompress(data)
    stride = 97  # every 97th byte of the tar stream: headers, file data, padding and end blocks alike
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        sig = archive.getmember("manifest.intoto.json.sig")
    # ... and every byte of the signature, the one file the manifest cannot hash (ssh-keygen
    # itself accepts a changed last byte: found by flipping all 51,200 bytes once).
    offsets = sorted(set(range(0, len(tar), stride)) | set(range(sig.offset_data, sig.offset_data + sig.size)))
    mutants = []
    for offset in offsets:
        mutant = bytearray(tar)
        mutant[offset] ^= 0xFF
        mutants.append((offset, bundle_gzip(bytes(mutant))))
    survivors, tried = _verdicts(mutants, allowed, _scratch(tmp_path))
    print(f"flipped {tried} bytes of the {len(tar)}-byte tar stream (re-gzipped): {tried - len(survivors)} rejected")
    assert survivors == []
    assert io.BytesIO(tar).read(1)  # the tar is not empty
