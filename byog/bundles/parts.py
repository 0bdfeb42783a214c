"""A bundle larger than one PR attachment: the one deterministic archive cut into parts, and the
signed part manifest that names them.

GitHub takes attachments up to 25 MB. When a run's archive is still over that after
``pack.fit_budget`` squeezed it, ``byog bundle pack`` writes, beside ``X.tar.gz``:

- ``X.part1.tar.gz`` ... ``X.partN.tar.gz``: consecutive byte ranges of the archive ``X.tar.gz``
  would have been (each at most 25 MB; joined, they are that archive, byte for byte, with its own
  signed manifest inside);
- ``X.part0.tar.gz``: the part manifest, gzipped JSON ``{"payload": TEXT, "signature": ARMOR}``.
  ``TEXT`` is canonical JSON naming the archive's size and sha256 and every part's name, size and
  sha256; ``ARMOR`` is the SSH signature of ``TEXT`` (the bundle's namespace, the bundle's key).

Verify reads part 0 (at most ``MAX_PART0_BYTES`` compressed and decompressed, bounded JSON),
checks the signature of ``TEXT`` before it parses ``TEXT``, then checks each part's size and
sha256 before one byte of it is used, and only then joins them into the archive that the usual
checks read (its size held to the same cap as a one-part bundle's). A part missing, swapped or
altered is refused naming the part. The parts of a set carry only the names part 0 gives them
(``X.partK.tar.gz``), so a manifest cannot point outside the folder.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from byog.bundles.archive import gzip_bytes
from byog.bundles.bounds import load_json
from byog.bundles.sign import SignatureCheck, verify_signature
from byog.core.canonical import canonical_json
from byog.core.errors import CheckFailed, UsageError

PART_BYTES = 25 * 1000 * 1000  # GitHub's attachment limit (pack.BUDGET_BYTES)
MAX_PART0_BYTES = 64 * 1024  # a part manifest names at most a few dozen parts
KIND = "byog-bundle-parts"
_PART = re.compile(r"^(?P<stem>.+)\.part(?P<index>0|[1-9][0-9]{0,2})\.tar\.gz$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def part_name(stem: str, index: int) -> str:
    return f"{stem}.part{index}.tar.gz"


def stem_of(bundle: Path) -> str:
    """``X`` of ``X.tar.gz`` (or of ``X.partK.tar.gz``)."""
    match = _PART.match(bundle.name)
    if match:
        return match["stem"]
    return bundle.name.removesuffix(".tar.gz").removesuffix(".tgz")


def is_part(path: Path) -> bool:
    return _PART.match(path.name) is not None


@dataclass(frozen=True)
class Part:
    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class PartManifest:
    archive_size: int
    archive_sha256: str
    parts: tuple[Part, ...]


def split(archive: bytes, stem: str, part_bytes: int = PART_BYTES) -> tuple[bytes, list[tuple[str, bytes]]]:
    """(the part manifest's payload text, [(part name, bytes)]) of ``archive`` cut into parts."""
    chunks = [archive[i : i + part_bytes] for i in range(0, len(archive), part_bytes)]
    parts = [(part_name(stem, k), chunk) for k, chunk in enumerate(chunks, start=1)]
    payload = canonical_json(
        {
            "kind": KIND,
            "schema_version": 1,
            "archive": {"size": len(archive), "sha256": hashlib.sha256(archive).hexdigest()},
            "parts": [{"name": n, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()} for n, b in parts],
        }
    )
    return payload, parts


def part0_bytes(payload: bytes, signature: bytes) -> bytes:
    document = {"payload": payload.decode("utf-8"), "signature": signature.decode("ascii")}
    return gzip_bytes(canonical_json(document))


def _gunzip_bounded(data: bytes, name: str) -> bytes:
    inflate = zlib.decompressobj(wbits=31)
    try:
        out = inflate.decompress(data, MAX_PART0_BYTES)
    except zlib.error:
        raise CheckFailed(f"{name} is not gzip data: it is no byog part manifest") from None
    if inflate.unconsumed_tail or not inflate.eof:
        raise CheckFailed(f"{name} inflates past {MAX_PART0_BYTES // 1024} KiB or is cut short: no byog part manifest")
    return out


def read_part0(path: Path) -> tuple[bytes, bytes]:
    """(payload, signature) of a part manifest file, read within bounds, nothing of the payload parsed."""
    if not path.is_file():
        raise CheckFailed(f"part 0 ({path.name}, the signed part manifest) is missing from {path.parent}")
    if path.stat().st_size > MAX_PART0_BYTES:
        raise CheckFailed(f"part 0 ({path.name}) is over {MAX_PART0_BYTES // 1024} KiB: no byog part manifest")
    document = load_json(_gunzip_bounded(path.read_bytes(), path.name), path.name)
    if not isinstance(document, dict) or set(document) != {"payload", "signature"}:
        raise CheckFailed(f"part 0 ({path.name}) is not a byog part manifest (payload and signature)")
    payload, signature = document["payload"], document["signature"]
    if not isinstance(payload, str) or not isinstance(signature, str):
        raise CheckFailed(f"part 0 ({path.name}): payload and signature must be text")
    return payload.encode("utf-8"), signature.encode("utf-8")


def _parse_payload(payload: bytes, stem: str, max_archive_bytes: int) -> PartManifest:
    """The signed payload (read only after its signature held), held to its exact shape."""
    doc: Any = load_json(payload, "the part manifest")
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("schema_version") != 1:
        raise CheckFailed(f"the part manifest is not a {KIND} document of schema_version 1")
    archive, listed = doc.get("archive"), doc.get("parts")
    if not isinstance(archive, dict) or not isinstance(listed, list) or not listed:
        raise CheckFailed("the part manifest names no archive or no parts")
    parts = []
    for k, entry in enumerate(listed, start=1):
        want = part_name(stem, k)
        if not isinstance(entry, dict) or entry.get("name") != want:
            raise CheckFailed(f"the part manifest's part {k} is not named {want}")
        size, digest = entry.get("size"), entry.get("sha256")
        if not isinstance(size, int) or size < 1 or not isinstance(digest, str) or not _SHA256.match(digest):
            raise CheckFailed(f"the part manifest's part {k} ({want}) has no size or sha256")
        parts.append(Part(want, size, digest))
    total, whole = archive.get("size"), archive.get("sha256")
    if not isinstance(total, int) or not isinstance(whole, str) or not _SHA256.match(whole):
        raise CheckFailed("the part manifest gives no archive size or sha256")
    if total != sum(p.size for p in parts):
        raise CheckFailed("the part manifest's parts do not add up to its archive's size")
    if total > max_archive_bytes:
        raise CheckFailed(
            f"the parts add up to {total / 1e6:.1f} MB, over the {max_archive_bytes / 1e6:.0f} MB a bundle may be"
        )
    return PartManifest(total, whole, tuple(parts))


def find_part0(given: list[Path]) -> tuple[Path, dict[str, Path]]:
    """Part 0 of a set given as paths (any part finds part 0 beside it) and every given part by name."""
    by_name = {p.name: p for p in given}
    stems = {stem_of(p) for p in given}
    if len(stems) != 1 or not all(is_part(p) for p in given):
        raise UsageError(
            "give one bundle, or the parts of one multi-part bundle (X.part0.tar.gz ... X.partN.tar.gz): "
            + ", ".join(sorted(p.name for p in given))
        )
    zero = part_name(stems.pop(), 0)
    return by_name.get(zero, given[0].parent / zero), by_name


def join_parts(
    given: list[Path], allowed_signers: Path | None, *, max_archive_bytes: int, out: Path
) -> tuple[SignatureCheck, int]:
    """Check the signed part manifest, then every part, then write the joined archive to ``out``.

    Returns the part manifest's signer and the number of parts; CheckFailed names the part at fault."""
    zero, by_name = find_part0(given)
    payload, signature = read_part0(zero)
    if allowed_signers is None:
        raise CheckFailed(
            "a multi-part bundle's part manifest needs --allowed-signers: no part is read before its signer is known"
        )
    signer = verify_signature(payload, signature, allowed_signers)
    stem = stem_of(zero)
    manifest = _parse_payload(payload, stem, max_archive_bytes)
    partial = out.with_name(f".{out.name}.partial")  # the archive appears whole or not at all
    try:
        with partial.open("wb") as sink:
            _copy_checked(manifest, by_name, zero.parent, sink)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    return signer, len(manifest.parts)


def _copy_checked(manifest: PartManifest, by_name: dict[str, Path], folder: Path, sink: BinaryIO) -> None:
    """Every part, checked against the signed manifest before it is written to ``sink``."""
    whole = hashlib.sha256()
    for k, part in enumerate(manifest.parts, start=1):
        path = by_name.get(part.name, folder / part.name)
        label = f"part {k} of {len(manifest.parts)} ({part.name})"
        if not path.is_file():
            raise CheckFailed(f"{label} is missing from {path.parent}")
        data = _read_capped(path, part.size + 1)
        if len(data) != part.size or hashlib.sha256(data).hexdigest() != part.sha256:
            raise CheckFailed(
                f"{label} is not the part the signed manifest names ({len(data):,} bytes, sha256 differs): "
                "altered, or another part in its place"
            )
        whole.update(data)
        sink.write(data)
    if whole.hexdigest() != manifest.archive_sha256:
        raise CheckFailed("the parts, joined, are not the archive the signed part manifest names")


def _read_capped(path: Path, limit: int) -> bytes:
    with path.open("rb") as source:
        return source.read(limit)
