"""A multi-part bundle (byog.bundles.parts): pack writes parts and a signed part manifest when the
archive is over budget; verify takes the set, or part 0 alone, and refuses a set with a part
missing, swapped or altered, naming the part, before any part is opened."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from byog.bundles.finalize import Packed, seal_and_pack
from byog.bundles.parts import part_name
from byog.bundles.sign import SigningKey
from byog.bundles.verify import VerifyReport, verify_bundle_set
from byog.core.paths import RunDir
from tests.support.bundles_kit import build_bundle
from tests.support.keys import allowed_signers, make_key

PARTS_OF = 9000  # bytes a part: the tiny bundle's ~25 kB archive goes in a few parts


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Packed, Path, SigningKey, RunDir]:
    folder = tmp_path_factory.mktemp("parts")
    key, public = make_key(folder, "alice")
    allowed = allowed_signers(folder / "allowed_signers", [("alice@example.com", public)])
    run_dir, single = build_bundle(folder, key)
    packed = seal_and_pack(run_dir, folder / "out" / "bundle.tar.gz", key=key, budget_bytes=PARTS_OF)
    return folder, packed, allowed, key, run_dir


def _copy_set(packed: Packed, dest: Path) -> list[Path]:
    dest.mkdir()
    return [Path(shutil.copy(p, dest / p.name)) for p in packed.parts]


def _failed(report: VerifyReport) -> str:
    assert not report.verified
    (failure,) = [r for r in report.results if r.status == "fail"]
    assert failure.name == "parts"
    return failure.message


def test_an_archive_over_budget_is_packed_in_signed_parts(multi: tuple[Path, Packed, Path, SigningKey, RunDir]) -> None:
    folder, packed, _, _, _ = multi
    assert len(packed.parts) >= 3 and packed.bundle.name == "bundle.part0.tar.gz"
    assert not (folder / "out" / "bundle.tar.gz").exists()
    assert all(p.stat().st_size <= PARTS_OF for p in packed.parts[1:])
    assert sum(p.stat().st_size for p in packed.parts[1:]) == packed.size_bytes


def test_the_set_and_part_zero_alone_verify(
    multi: tuple[Path, Packed, Path, SigningKey, RunDir], tmp_path: Path
) -> None:
    _, packed, allowed, _, _ = multi
    parts = _copy_set(packed, tmp_path / "set")
    for given in (parts, parts[:1], list(reversed(parts))):
        report = verify_bundle_set(given, allowed_signers=allowed)
        assert report.verified, report.failures
        assert report.results[0].name == "parts" and report.bundle.endswith("bundle.part0.tar.gz")


def test_any_part_finds_part_zero_beside_it(
    multi: tuple[Path, Packed, Path, SigningKey, RunDir], tmp_path: Path
) -> None:
    _, packed, allowed, _, _ = multi
    parts = _copy_set(packed, tmp_path / "set")
    assert verify_bundle_set([parts[2]], allowed_signers=allowed).verified


def test_a_missing_part_is_named(multi: tuple[Path, Packed, Path, SigningKey, RunDir], tmp_path: Path) -> None:
    _, packed, allowed, _, _ = multi
    parts = _copy_set(packed, tmp_path / "set")
    parts[2].unlink()
    message = _failed(verify_bundle_set(parts[:1], allowed_signers=allowed))
    assert f"part 2 of {len(parts) - 1} ({part_name('bundle', 2)}) is missing" in message


def test_swapped_parts_are_named(multi: tuple[Path, Packed, Path, SigningKey, RunDir], tmp_path: Path) -> None:
    _, packed, allowed, _, _ = multi
    parts = _copy_set(packed, tmp_path / "set")
    one, two = parts[1].read_bytes(), parts[2].read_bytes()
    parts[1].write_bytes(two)
    parts[2].write_bytes(one)
    message = _failed(verify_bundle_set(parts, allowed_signers=allowed))
    assert f"part 1 of {len(parts) - 1} ({part_name('bundle', 1)}) is not the part the signed manifest names" in message


def test_an_altered_part_is_named(multi: tuple[Path, Packed, Path, SigningKey, RunDir], tmp_path: Path) -> None:
    _, packed, allowed, _, _ = multi
    parts = _copy_set(packed, tmp_path / "set")
    data = bytearray(parts[-1].read_bytes())
    data[len(data) // 2] ^= 1
    parts[-1].write_bytes(bytes(data))
    message = _failed(verify_bundle_set(parts, allowed_signers=allowed))
    last = len(parts) - 1
    assert f"part {last} of {last} ({part_name('bundle', last)}) is not the part" in message


def test_a_part_manifest_by_another_key_is_refused_before_any_part_is_read(
    multi: tuple[Path, Packed, Path, SigningKey, RunDir], tmp_path: Path
) -> None:
    folder, packed, _, _, _ = multi
    _, stranger = make_key(tmp_path, "mallory")
    others = allowed_signers(tmp_path / "allowed_signers", [("mallory@example.com", stranger)])
    parts = _copy_set(packed, tmp_path / "set")
    for part in parts[1:]:
        part.unlink()  # never needed: the signer fails first
    assert "the wrong signer" in _failed(verify_bundle_set(parts[:1], allowed_signers=others))


def test_packing_again_within_budget_removes_the_parts(
    multi: tuple[Path, Packed, Path, SigningKey, RunDir], tmp_path: Path
) -> None:
    _, _, allowed, key, run_dir = multi
    out = tmp_path / "bundle.tar.gz"
    split = seal_and_pack(run_dir, out, key=key, budget_bytes=PARTS_OF)
    assert all(p.is_file() for p in split.parts)
    whole = seal_and_pack(run_dir, out, key=key)
    assert not whole.parts and out.is_file() and not any(p.exists() for p in split.parts)
    assert verify_bundle_set([out], allowed_signers=allowed).verified


def test_bundle_join_writes_the_archive_or_names_the_part(
    multi: tuple[Path, Packed, Path, SigningKey, RunDir], tmp_path: Path
) -> None:
    from tests.support.cli import byog

    _, packed, allowed, _, _ = multi
    parts = _copy_set(packed, tmp_path / "set")
    out = tmp_path / "joined.tar.gz"
    done = byog("bundle", "join", str(parts[0]), "-o", str(out), "--allowed-signers", str(allowed))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == b"".join(p.read_bytes() for p in parts[1:])
    assert verify_bundle_set([out], allowed_signers=allowed).verified
    parts[1].write_bytes(parts[1].read_bytes()[:-1])
    failed = byog("bundle", "join", str(parts[0]), "-o", str(tmp_path / "no.tar.gz"), "--allowed-signers", str(allowed))
    assert failed.returncode == 1 and "part 1 of" in failed.stderr + failed.stdout
    assert "Traceback" not in failed.stderr and not (tmp_path / "no.tar.gz").exists()
