"""Hostile bundles, one per class of the verify-hardening issue, and a way to run `byog verify` on
each as a separate process under a memory limit, measuring exit code, wall time and peak memory.

Used by ``tests/unit/bundles/test_bounds.py`` (asserts each refusal, exit code, wall <= 10 s,
peak <= 1 GB, an empty temp dir afterwards) and ``benchmarks/verify_hostile.py`` (prints the
table). Every big input is generated at run time from a compressible pattern and streamed into
the archive, so nothing big is ever held in memory or stored in the repository.

A "forged" bundle is what an attacker writes with their own tools: any files, a manifest whose
subjects are the files' real sha256 (so the hashes check passes), signed by the trusted test key
(``trusted=True``: the content checks run, and the bounds must stop the bomb) or by a stranger's
key (the gate must stop it before any content is read).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import resource
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import psutil

from byog.bundles.archive import GZIP_COMMENT_PREFIX, GZIP_HEADER, archive_order, write_tar
from byog.bundles.finalize import seal_and_pack
from byog.bundles.sign import SigningKey, sign_bytes
from byog.bundles.unpack import Limits
from byog.core.canonical import canonical_json
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME
from tests.support.cli import BYOG
from tests.support.keys import make_key
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

REPO = Path(__file__).resolve().parents[2]
TINY = SyntheticSpec(batch_sizes=(1,), isl=4, osl=8, warmup_waves=0, waves=2, eval_items=4, log_lines=3)
MEMORY_LIMIT = 3 * 1024**3  # RLIMIT_AS of the verify process the harness starts
WALL_LIMIT_S = 10.0  # benchmarks/verify_hostile.py's bound on an idle machine
# The test's bound: CPU seconds of verify and every process it waited for (their own counters), which
# a loaded box does not stretch as it stretches wall time; a case that hangs instead of working
# meets the checking child's wall limit or KILL_AFTER_S, and its exit code and sentence say so.
CPU_LIMIT_S = 10.0
PEAK_LIMIT_MB = 1024.0
KILL_AFTER_S = 120.0
# Limits small enough that a test bundle of a few members crosses each of them.
SMALL = Limits(max_members=20, max_member_bytes=4096, max_total_bytes=16_384, max_stream_bytes=64 * 1024)


# --- payloads: big members described, never materialised ------------------------------------


@dataclass(frozen=True)
class Payload:
    """``head + unit * count + tail``: a member of any size, streamed in chunks."""

    head: bytes = b""
    unit: bytes = b""
    count: int = 0
    tail: bytes = b""

    @property
    def size(self) -> int:
        return len(self.head) + len(self.unit) * self.count + len(self.tail)

    def chunks(self) -> Iterator[bytes]:
        yield self.head
        per = max(1, (1 << 20) // max(len(self.unit), 1))
        left = self.count
        block = self.unit * per
        while left > 0:
            n = min(per, left)
            yield block if n == per else self.unit * n
            left -= n
        yield self.tail

    def sha256(self) -> str:
        digest = hashlib.sha256()
        for chunk in self.chunks():
            digest.update(chunk)
        return digest.hexdigest()


class _PayloadReader(io.RawIOBase):
    def __init__(self, payload: Payload) -> None:
        self._chunks = payload.chunks()
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            try:
                self._buffer += next(self._chunks)
            except StopIteration:
                break
        if size < 0:
            size = len(self._buffer)
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out


class _GzipSink:
    """Where write_tar writes: raw deflate, CRC and length, then byog's self-checking gzip header."""

    def __init__(self) -> None:
        self.compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        self.body = io.BytesIO()
        self.crc = 0
        self.length = 0

    def write(self, data: bytes) -> int:
        self.body.write(self.compressor.compress(data))
        self.crc = zlib.crc32(data, self.crc)
        self.length += len(data)
        return len(data)

    def tell(self) -> int:
        return self.length

    def finish(self) -> bytes:
        self.body.write(self.compressor.flush() + struct.pack("<II", self.crc, self.length & 0xFFFFFFFF))
        body = self.body.getvalue()
        return GZIP_HEADER + GZIP_COMMENT_PREFIX + hashlib.sha256(body).hexdigest().encode() + b"\0" + body


def write_archive(
    path: Path, members: dict[str, bytes | Payload], order: Callable[[Iterable[str]], list[str]] = archive_order
) -> Path:
    """A bundle archive in byog's exact container (canonical headers), its members in ``order``
    (byog's own unless a case is about the order)."""
    sink = _GzipSink()

    def entries() -> Iterator[tuple[str, int, BinaryIO]]:
        for name in order(members):
            data = members[name]
            if isinstance(data, Payload):
                yield name, data.size, _PayloadReader(data)  # type: ignore[misc]
            else:
                yield name, len(data), io.BytesIO(data)

    write_tar(sink, entries())  # type: ignore[arg-type]
    path.write_bytes(sink.finish())
    return path


def member_info(name: str, size: int) -> tarfile.TarInfo:
    """byog's header fields as a tarfile.TarInfo: hostile archives are written with tarfile (a writer,
    on the test's own bytes), then changed in the one field each case is about."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


# --- the kit: a real signed bundle to start from, a trusted and a stranger's key --------------


@dataclass
class Kit:
    folder: Path
    key: SigningKey  # trusted: listed in allowed
    stranger: SigningKey  # not listed
    allowed: Path
    files: dict[str, bytes]  # a real bundle's files, manifest and signature excluded
    predicate: dict  # type: ignore[type-arg]

    @classmethod
    def create(cls, folder: Path) -> Kit:
        folder.mkdir(parents=True, exist_ok=True)
        key, public = make_key(folder, "alice")
        stranger, _ = make_key(folder, "mallory")
        allowed = folder / "allowed_signers"
        allowed.write_text(f'alice@example.com namespaces="byog-bundle@v1" {public}\n')
        run_dir = make_run_dir(folder / "base-run", TINY)
        run_dir.plots_dir.mkdir(exist_ok=True)
        seal_and_pack(run_dir, folder / "base.tar.gz", key=key)
        files = {
            p.relative_to(run_dir.root).as_posix(): p.read_bytes()
            for p in sorted(run_dir.root.rglob("*"))
            if p.is_file()
        }
        manifest = json.loads(files.pop(MANIFEST_NAME))
        files.pop(SIGNATURE_NAME, None)
        files.pop("bundle.tar.gz", None)
        return cls(folder, key, stranger, allowed, files, manifest["predicate"])

    def forge(
        self,
        name: str,
        changes: dict[str, bytes | Payload | None],
        *,
        trusted: bool = True,
        subjects: list[dict] | None = None,
        predicate: dict | None = None,
        order: Callable[[Iterable[str]], list[str]] = archive_order,
    ) -> Path:  # type: ignore[type-arg]
        """The base bundle with ``changes`` (None removes a file), a manifest over the result, signed."""
        members: dict[str, bytes | Payload] = dict(self.files)
        for path, data in changes.items():
            if data is None:
                members.pop(path, None)
            else:
                members[path] = data
        listed = (
            subjects
            if subjects is not None
            else [
                {
                    "name": path,
                    "digest": {
                        "sha256": data.sha256() if isinstance(data, Payload) else hashlib.sha256(data).hexdigest()
                    },
                }
                for path, data in sorted(members.items())
                if path not in (MANIFEST_NAME, SIGNATURE_NAME)
            ]
        )
        statement = {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": listed,
            "predicateType": "https://byog.dev/bundle/v1",
            "predicate": predicate or self.predicate,
        }
        if MANIFEST_NAME not in changes:
            members[MANIFEST_NAME] = canonical_json(statement)
        if SIGNATURE_NAME not in changes:
            manifest = members[MANIFEST_NAME]
            assert isinstance(manifest, bytes)
            members[SIGNATURE_NAME] = sign_bytes(manifest, self.key if trusted else self.stranger)
        return write_archive(self.folder / f"{name}.tar.gz", members, order)


# --- cases ------------------------------------------------------------------------------------


@dataclass
class Built:
    bundle: Path
    args: list[str] = field(default_factory=list)
    command: str = "verify"  # the byog command run on the bundle
    sentinel: Path | None = None  # a file that exists only if something the bundle asked for ran


@dataclass(frozen=True)
class Case:
    name: str
    what: str  # the class of the issue it stands for
    build: Callable[[Kit], Built]
    exit: int  # the exit code verify must give
    says: str  # a phrase its output must contain (the refusal)
    slow: bool = False  # builds a big input (a few seconds)
    timed: bool = True  # the test holds its CPU time to CPU_LIMIT_S; else only the benchmark measures it


def _alias_bomb() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        prev, this = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"{this}: &{this} [{', '.join(['*' + prev] * 9)}]")
    return ("\n".join(lines) + "\n").encode()


def _parquet(table_builder: Callable[[], object]) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table_builder(), sink, compression="zstd")  # type: ignore[arg-type]
    return sink.getvalue()


def _many_rows(rows: int) -> bytes:
    import pyarrow as pa

    return _parquet(lambda: pa.table({"request_index": pa.array(range(rows), type=pa.int64())}))


def _big_cell(size: int) -> bytes:
    import pyarrow as pa

    return _parquet(lambda: pa.table({"item_id": ["test:0"], "extracted_answer": ["x" * size]}))


def _bench_rows_name(kit: Kit) -> str:
    return next(name for name in sorted(kit.files) if name.startswith("bench/baseline/") and name.endswith(".parquet"))


def _plan_200_cubed(kit: Kit) -> bytes:
    values = ", ".join(str(i) for i in range(1, 201))
    text = plan_yaml(TINY).replace("batch_sizes: [1]", f"batch_sizes: [{values}]")
    text = text.replace(f"isl: [{TINY.isl}]", f"isl: [{values}]").replace(f"osl: [{TINY.osl}]", f"osl: [{values}]")
    return text.encode()


FORGED_LINE = "\n\x1b[32mok  \x1b[0m signature: signed by alice@example.com (SHA256:forged)\r[bold green]verified[/]"


def _forged_lines_untrusted(kit: Kit) -> Built:
    """A stranger's bundle whose manifest names a file with newlines, ANSI escapes and rich markup."""
    listed = [{"name": f"plan.yaml{FORGED_LINE}", "digest": {"sha256": "0" * 64}}]
    return Built(kit.forge("forged-lines-untrusted", {}, trusted=False, subjects=listed))


def _claims_file(kit: Kit, text: str, name: str) -> Path:
    path = kit.folder / name
    path.write_text(text)
    return path


def _baseline_only(kit: Kit) -> Built:
    """A real, signed bundle of a plan with no candidate, and a policy that requires a verdict."""
    text = plan_yaml(TINY).replace("  candidate:\n    runtime: local\n", "")
    run_dir = make_run_dir(kit.folder / "baseline-only-run", TINY, plan_text=text)
    run_dir.plots_dir.mkdir(exist_ok=True)
    packed = seal_and_pack(run_dir, kit.folder / "baseline-only.tar.gz", key=kit.key)
    policy = _claims_file(kit, "schema_version: 1\nrequired_tasks: [gsm8k]\n", "policy-tasks.yaml")
    return Built(packed.bundle, ["--policy", str(policy)])


def _replayed(kit: Kit) -> Built:
    run_dir = make_run_dir(kit.folder / "replay-run", TINY)
    run_dir.plots_dir.mkdir(exist_ok=True)
    packed = seal_and_pack(run_dir, kit.folder / "for-pr-1.tar.gz", key=kit.key, subject="octo/repo#1")
    return Built(packed.bundle, ["--for", "octo/repo#2"])


def _markup_member(kit: Kit) -> Built:
    """A trusted bundle with a member name in rich markup: refused, and quoted inert, by the second pass."""
    return Built(kit.forge("markup-member", {"plots/[/x][red]boom.png": b"x"}))


def _forged_claim_label(kit: Kit) -> Built:
    """A trusted bundle whose own claims.yaml carries a label made to print fake check lines."""
    run_dir = make_run_dir(kit.folder / "claim-label-run", TINY)
    run_dir.plots_dir.mkdir(exist_ok=True)
    label = json.dumps(f"b1{FORGED_LINE}")
    (run_dir.root / "claims.yaml").write_text(
        f"schema_version: 1\nclaims:\n  - name: {label}\n    server: candidate\n    select: {{batch_size: 1}}\n"
        "    metric: decode_tok_s\n    value: 1.0e9\n"
    )
    packed = seal_and_pack(run_dir, kit.folder / "claim-label.tar.gz", key=kit.key)
    return Built(packed.bundle)


def _container(kit: Kit, name: str, after: bytes = b"", *, flags: int | None = None, extra: bytes = b"") -> Built:
    """The trusted base bundle with bytes no signature covers: ``after`` its gzip trailer, or a gzip
    header with other ``flags`` and ``extra`` (a field) before its comment; the header's checksum updated."""
    data = (kit.folder / "base.tar.gz").read_bytes()
    header, comment, body = data[:10], data[10 : len(GZIP_HEADER) + 77], data[len(GZIP_HEADER) + 77 :]
    if flags is not None:
        header = header[:3] + bytes([flags]) + header[4:]
    body += after
    comment = GZIP_COMMENT_PREFIX + hashlib.sha256(body).hexdigest().encode() + b"\0"
    path = kit.folder / f"{name}.tar.gz"
    path.write_bytes(header + extra + comment + body)
    return Built(path)


def gzip_member(flags: int, field: bytes) -> bytes:
    """An empty gzip member: a header with ``flags`` and its ``field``, an empty deflate block, CRC 0, length 0."""
    return bytes([0x1F, 0x8B, 0x08, flags, 0, 0, 0, 0, 0, 0xFF]) + field + b"\x03\x00" + b"\0" * 8


def _zip_polyglot() -> bytes:
    """A ZIP archive inside a second gzip member's extra field: `unzip` finds it from the file's end."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("payload.sh", "echo unsigned bytes\n")
    data = out.getvalue()
    return gzip_member(0x04, len(data).to_bytes(2, "little") + data)


def _claim_at_invalid_point(kit: Kit) -> Built:
    """A trusted bundle whose candidate point is flagged invalid (one short answer), with a ratio
    claim at that point stating exactly the measured ratio."""
    import pyarrow.parquet as pq

    from byog.analysis.summary import derive_summary
    from byog.core.io import atomic_write_json, atomic_write_text
    from byog.report.markdown import render_report

    run_dir = make_run_dir(kit.folder / "invalid-point-run", TINY)
    run_dir.plots_dir.mkdir(exist_ok=True)
    (rows_file,) = sorted((run_dir.root / "bench" / "candidate").glob("*.parquet"))
    table = pq.read_table(rows_file)
    n_out = table.column("n_out").to_pylist()
    n_out[0] -= 1  # the server returned one token short: the point's numbers are not the OSL's
    pq.write_table(table.set_column(table.schema.get_field_index("n_out"), "n_out", [n_out]), rows_file)
    summary = derive_summary(run_dir)
    point = next(p for p in summary.bench.points if p.server == "candidate")
    base = next(p for p in summary.bench.points if p.server == "baseline" and p.point_id == point.point_id)
    assert not point.valid and point.metrics is not None and base.metrics is not None
    ratio = point.metrics.decode_tok_s / base.metrics.decode_tok_s
    (run_dir.root / "claims.yaml").write_text(
        "schema_version: 1\nclaims:\n  - kind: ratio\n    name: b1 speed-up\n    candidate: candidate\n"
        f"    baseline: baseline\n    point: {point.point_id}\n    metric: decode_tok_s\n    value: {ratio!r}\n"
    )
    atomic_write_json(run_dir.summary_json, summary.to_json())
    atomic_write_text(run_dir.report_md, render_report(run_dir, summary))
    return Built(seal_and_pack(run_dir, kit.folder / "claim-at-invalid-point.tar.gz", key=kit.key).bundle)


def _not_checked_claims(kit: Kit) -> Built:
    text = (
        "schema_version: 1\nclaims:\n  - {server: candidate, select: {batch_size: 1}, metric: decode_tok_s, "
        "value: 1.0e9, not_checked: not measured yet}\n"
    )
    return Built(kit.folder / "base.tar.gz", ["--claims", str(_claims_file(kit, text, "not-checked.yaml"))])


CLAIM_CASES: list[Case] = [
    Case(
        "claim-at-invalid-point",
        "a ratio claim at a point flagged invalid (trusted bundle, the claim is the measured ratio)",
        _claim_at_invalid_point,
        1,
        "not checked: invalid point",
    ),
    Case(
        "claims-all-not-checked",
        "--claims whose every claim is not_checked",
        _not_checked_claims,
        1,
        "none of the 1 claim(s) can be checked",
    ),
    Case(
        "unsigned-names-a-signer",
        "an unsigned bundle (--allow-unsigned) whose signer.json names the trusted key",
        lambda kit: Built(kit.forge("unsigned-names-a-signer", {SIGNATURE_NAME: None}), ["--allow-unsigned"]),
        1,
        "only a valid signature names a signer",
    ),
]


def _many_members(kit: Kit, name: str, count: int, *, trusted: bool) -> Built:
    """The base bundle plus ``count`` one-byte plots, listed in the manifest and signed."""
    extra: dict[str, bytes | Payload | None] = {f"plots/extra-{i:05d}.png": b"x" for i in range(count)}
    return Built(kit.forge(name, extra, trusted=trusted))


def _bench_points(kit: Kit, count: int) -> Built:
    """``count`` copies of one bench point's rows and record: more points than any honest plan runs."""
    rows = _bench_rows_name(kit)
    record = rows.removesuffix(".parquet") + ".json"
    extra: dict[str, bytes | Payload | None] = {}
    for i in range(count):
        extra[f"bench/candidate/copy-{i:05d}.parquet"] = kit.files[rows]
        extra[f"bench/candidate/copy-{i:05d}.json"] = kit.files[record]
    return Built(kit.forge(f"bench-points-{count}", extra))


def _json_files(kit: Kit, count: int) -> Built:
    """``count`` bench records of 1 MiB each (every one within its own cap)."""
    one = Payload(b'{"x": [', b"0,", (2**20 - 12) // 2, b"0]}")
    extra: dict[str, bytes | Payload | None] = {f"bench/candidate/big-{i:03d}.json": one for i in range(count)}
    return Built(kit.forge(f"json-{count}x1mib", extra))


def _raw_archive(path: Path, blocks: bytes) -> Path:
    """``blocks`` as the tar stream inside byog's own gzip container (checksum right): only the tar
    headers are foreign."""
    sink = _GzipSink()
    sink.write(blocks)
    path.write_bytes(sink.finish())
    return path


def _tarfile_stream(build: Callable[[tarfile.TarFile], None], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tar:
        build(tar)
    return raw.getvalue()


def _pax_member(tar: tarfile.TarFile, headers: dict[str, str], size: int = 1) -> None:
    info = member_info("a", size)
    info.pax_headers = headers
    tar.addfile(info, io.BytesIO(b"x" * size))


def _pax_records(kit: Kit) -> Built:
    """A 300 kB pax record of 20,000 keywords: tarfile parsed every one before the signature."""
    headers = {f"k{i:05d}": "v" * 8 for i in range(20_000)}
    return Built(_raw_archive(kit.folder / "pax-records.tar.gz", _tarfile_stream(lambda t: _pax_member(t, headers))))


def _sparse_map(kit: Kit) -> Built:
    """A GNU sparse map of 100,000 regions in a pax record (tarfile built the whole map in memory)."""
    regions = ",".join(f"{i * 2},1" for i in range(100_000))
    headers = {"GNU.sparse.map": regions, "GNU.sparse.size": str(200_000)}
    return Built(_raw_archive(kit.folder / "sparse-map.tar.gz", _tarfile_stream(lambda t: _pax_member(t, headers))))


def _gnu_sparse(kit: Kit) -> Built:
    def build(tar: tarfile.TarFile) -> None:
        info = member_info("a", 0)
        info.type = tarfile.GNUTYPE_SPARSE
        tar.addfile(info)

    return Built(_raw_archive(kit.folder / "gnu-sparse.tar.gz", _tarfile_stream(build, tarfile.GNU_FORMAT)))


TINY_SPARSE = {  # pax sparse records tarfile's int() raised ValueError on: files of 236-280 bytes
    "map": {"GNU.sparse.map": "1,x", "GNU.sparse.size": "9"},
    "size": {"GNU.sparse.map": "0,1", "GNU.sparse.size": "x" * 40},
    "numbytes": {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "a", "GNU.sparse.realsize": "y"},
}


def _tiny_header(kit: Kit, kind: str) -> Built:
    stream = _tarfile_stream(lambda t: _pax_member(t, TINY_SPARSE[kind]))
    return Built(_raw_archive(kit.folder / f"tiny-{kind}.tar.gz", stream))


def _unsigned_big(kit: Kit) -> Built:
    """A 1.25 MB unsigned bundle (a poorly compressible member behind the manifest)."""
    noise = hashlib.sha256(b"seed").digest() * 4
    rows = b"".join(hashlib.sha256(noise + i.to_bytes(4, "big")).digest() for i in range(40_000))
    return Built(
        kit.forge("unsigned-big", {"bench/baseline/rows.parquet": rows, SIGNATURE_NAME: None, "signer.json": None})
    )


def _zeros(kit: Kit) -> Built:
    """500 MiB of zeros behind the manifest (about 500 kB compressed), signed by a stranger."""
    half = Payload(unit=bytes(1 << 20), count=250)
    return Built(kit.forge("zeros-500mib", {"bench/zeros-1.json": half, "bench/zeros-2.json": half}, trusted=False))


def _signer_last(names: Iterable[str]) -> list[str]:
    order = archive_order(names)
    return [name for name in order if name != "signer.json"] + ["signer.json"]


def _out_of_order(kit: Kit) -> Built:
    """A trusted bundle with its members sorted by name (the manifest after bench/, env.json, evals/),
    as byog packed before: refused at its first member without --allow-unsigned."""
    return Built(kit.forge("sorted-order", {}, order=sorted))


def _signer_late(kit: Kit) -> Built:
    """A trusted bundle with signer.json after the other members: refused at that member."""
    return Built(kit.forge("signer-late", {}, order=_signer_last))


# Archive shapes that are not byog's, and costs before the signature: each refused in one sentence
# after reading at most the gate members (the manifest, its signature, signer.json).
SHAPE_CASES: list[Case] = [
    Case("pax-records", "a 300 kB pax record", _pax_records, 1, "is a pax record"),
    Case("sparse-map-pax", "a GNU sparse map of 100,000 regions in a pax record", _sparse_map, 1, "is a pax record"),
    Case("gnu-sparse", "a GNU sparse file header", _gnu_sparse, 1, "is a GNU sparse file"),
    *(
        Case(
            f"tiny-sparse-{kind}",
            f"a tiny pax sparse record ({kind}) tarfile raised ValueError on",
            lambda kit, kind=kind: _tiny_header(kit, kind),
            1,
            "is a pax record",
        )
        for kind in TINY_SPARSE
    ),
    Case("unsigned-1.25mb", "a 1.25 MB unsigned bundle", _unsigned_big, 1, "the bundle is unsigned"),
    Case(
        "zeros-500mib-untrusted",
        "500 MiB of zeros, a stranger's signature",
        _zeros,
        1,
        "not checked: untrusted signer",
        slow=True,
    ),
    Case(
        "sorted-order",
        "members sorted by name (the manifest not first)",
        _out_of_order,
        1,
        "read only with --allow-unsigned",
    ),
    Case("signer-late", "signer.json after the other members", _signer_late, 1, "is out of byog's order"),
]


# Cost per member, per point and per parsed byte: verify must meet its time and memory goals at
# scale (benchmarks/verify_hostile.py prints the figures).
SCALE_CASES: list[Case] = [
    Case(
        "members-10000-untrusted",
        "10,000 tiny members from a stranger: refused before the signature",
        lambda kit: _many_members(kit, "members-10000-untrusted", 9_975, trusted=False),
        1,
        "not checked: untrusted signer",
        slow=True,
        timed=False,
    ),
    Case(
        "members-10001",
        "one member over the 10,000 cap",
        lambda kit: _many_members(kit, "members-10001", 10_001 - len(kit.files) - 2, trusted=True),
        1,
        "more than 10000 members",
        slow=True,
        timed=False,
    ),
    Case(
        "members-10000-trusted",
        "10,000 tiny members, trusted: verified (plots are never parsed)",
        lambda kit: _many_members(kit, "members-10000-trusted", 9_975, trusted=True),
        0,
        ": verified",
        slow=True,
        timed=False,
    ),
    Case(
        "bench-points-2400",
        "2,400 bench points, trusted",
        lambda kit: _bench_points(kit, 2_400),
        1,
        "bench points, over the cap",
        slow=True,
        timed=False,
    ),
    Case(
        "json-300x1mib",
        "300 JSON files of 1 MiB each, trusted",
        lambda kit: _json_files(kit, 300),
        1,
        "JSON and YAML files add up to",
        slow=True,
        timed=False,
    ),
]


CONTAINER_CASES: list[Case] = [
    Case(
        "gzip-trailing-nuls",
        "NUL padding after the gzip trailer (signed by a trusted key)",
        lambda kit: _container(kit, "gzip-trailing-nuls", b"\0" * 4096),
        1,
        "follows the end of the gzip stream",
    ),
    Case(
        "gzip-second-member-comment",
        "a second, empty gzip member carrying a comment",
        lambda kit: _container(kit, "gzip-second-member-comment", gzip_member(0x10, b"unsigned words\0")),
        1,
        "follows the end of the gzip stream",
    ),
    Case(
        "zip-polyglot",
        "a ZIP archive in a second gzip member's extra field",
        lambda kit: _container(kit, "zip-polyglot", _zip_polyglot()),
        1,
        "follows the end of the gzip stream",
    ),
    Case(
        "gzip-60mb-padding",
        "60 MB of NULs after the gzip trailer",
        lambda kit: _container(kit, "gzip-60mb-padding", b"\0" * 60_000_000),
        1,
        "follows the end of the gzip stream",
        slow=True,
    ),
    Case(
        "gzip-60mb-fname-member",
        "a second gzip member whose FNAME is 60 MB",
        lambda kit: _container(kit, "gzip-60mb-fname-member", gzip_member(0x08, b"x" * 60_000_000 + b"\0")),
        1,
        "follows the end of the gzip stream",
        slow=True,
    ),
    Case(
        "gzip-fname-header",
        "FNAME in the gzip header (byog never writes one)",
        lambda kit: _container(kit, "gzip-fname-header", flags=0x18, extra=b"bundle.tar\0"),
        1,
        "gzip header",
    ),
]


CASES: list[Case] = [
    *CONTAINER_CASES,
    *SHAPE_CASES,
    *CLAIM_CASES,
    *SCALE_CASES,
    Case(
        "yaml-alias-bomb",
        "YAML alias bomb in plan.yaml (signed by a trusted key)",
        lambda kit: Built(kit.forge("yaml-alias-bomb", {"plan.yaml": _alias_bomb()})),
        1,
        "alias bomb",
    ),
    Case(
        "yaml-alias-bomb-untrusted",
        "the same bomb from a stranger: gated before any content is read",
        lambda kit: Built(kit.forge("yaml-alias-bomb-untrusted", {"plan.yaml": _alias_bomb()}, trusted=False)),
        1,
        "not checked: untrusted signer",
    ),
    Case(
        "yaml-40mb-list",
        "a 40 MB list in claims.yaml",
        lambda kit: Built(
            kit.forge("yaml-40mb-list", {"claims.yaml": Payload(b"claims: [", b"0, ", 13_400_000, b"0]\n")})
        ),
        1,
        "cap for its kind",
        slow=True,
    ),
    Case(
        "json-255mb",
        "env.json that decompresses to 255 MB",
        lambda kit: Built(
            kit.forge("json-255mb", {"env.json": Payload(b'{"x": "', b"a" * 64, 255_000_000 // 64, b'"}')})
        ),
        1,
        "cap for its kind",
        slow=True,
    ),
    Case(
        "parquet-20m-rows",
        "a bench parquet file of 20 M rows (under 1 MB on disk)",
        lambda kit: Built(kit.forge("parquet-20m-rows", {_bench_rows_name(kit): _many_rows(20_000_000)})),
        1,
        "rows, over the cap",
        slow=True,
    ),
    Case(
        "manifest-255mb",
        "a 255 MB manifest",
        lambda kit: Built(
            kit.forge(
                "manifest-255mb",
                {
                    MANIFEST_NAME: Payload(b'{"_type": "', b"x" * 64, 255_000_000 // 64, b'"}'),
                    SIGNATURE_NAME: b"-----BEGIN SSH SIGNATURE-----\n",
                },
            )
        ),
        1,
        "cap for its kind",
        slow=True,
    ),
    Case(
        "plan-200-cubed",
        "a 3 kB plan whose matrix expands to 200^3 points",
        lambda kit: Built(kit.forge("plan-200-cubed", {"plan.yaml": _plan_200_cubed(kit)})),
        1,
        "8,000,000 bench points",
    ),
    Case(
        "parquet-200mb-cell",
        "one parquet cell of 200 MB",
        lambda kit: Built(
            kit.forge("parquet-200mb-cell", {"evals/baseline/gsm8k/items.parquet": _big_cell(200_000_000)})
        ),
        1,
        "decompresses to more than",
        slow=True,
    ),
    Case(
        "yaml-100mb-comments",
        "100 MB of YAML comments in plan.yaml",
        lambda kit: Built(
            kit.forge(
                "yaml-100mb-comments",
                {"plan.yaml": Payload(plan_yaml(TINY).encode(), b"# padding padding\n", 100_000_000 // 18)},
            )
        ),
        1,
        "cap for its kind",
        slow=True,
    ),
    Case(
        "signature-200mb",
        "a 200 MB armored signature",
        lambda kit: Built(
            kit.forge(
                "signature-200mb",
                {
                    SIGNATURE_NAME: Payload(
                        b"-----BEGIN SSH SIGNATURE-----\n",
                        b"A" * 70 + b"\n",
                        200_000_000 // 71,
                        b"-----END SSH SIGNATURE-----\n",
                    )
                },
            )
        ),
        1,
        "cap for its kind",
        slow=True,
    ),
    Case("markup-member-name", "rich markup ([/x]) in an archive member name", _markup_member, 1, "[/x][red]boom.png"),
    Case(
        "forged-lines-untrusted",
        "newlines, ANSI escapes and markup printing fake 'ok signature' lines (stranger's manifest): the"
        " subjects of an untrusted manifest are never read, so never printed",
        _forged_lines_untrusted,
        1,
        "not checked: untrusted signer",
    ),
    Case(
        "forged-lines-claim-label", "the same in a trusted bundle's claim label", _forged_claim_label, 1, "\\x1b[32mok"
    ),
    Case(
        "deep-json",
        "env.json nested 200,000 deep",
        lambda kit: Built(kit.forge("deep-json", {"env.json": b"[" * 200_000 + b"]" * 200_000})),
        1,
        "nested deeper than",
    ),
    Case(
        "non-utf8-report",
        "report.md that is not UTF-8",
        lambda kit: Built(kit.forge("non-utf8-report", {"report.md": kit.files["report.md"] + b"\xff\xfe\xfd"})),
        1,
        "not UTF-8",
    ),
    Case(
        "non-utf8-json",
        "env.json that is not UTF-8",
        lambda kit: Built(kit.forge("non-utf8-json", {"env.json": b'{"cpu": "caf\xe9"}'})),
        1,
        "not UTF-8",
    ),
    Case(
        "nan-claims-cli",
        "--claims with value: .nan",
        lambda kit: Built(
            kit.folder / "base.tar.gz",
            [
                "--claims",
                str(
                    _claims_file(
                        kit,
                        "schema_version: 1\nclaims:\n  - {server: candidate, point: x, metric: decode_tok_s, value: "
                        ".nan}\n",
                        "nan.yaml",
                    )
                ),
            ],
        ),
        2,
        "not a finite number",
    ),
    Case(
        "inf-tolerance-in-bundle",
        "claims.yaml in the bundle with tolerance: .inf",
        lambda kit: Built(
            kit.forge(
                "inf-tolerance",
                {
                    "claims.yaml": b"schema_version: 1\nclaims:\n  - {server: candidate, point: x, metric: "
                    b"decode_tok_s, value: 1, tolerance: .inf}\n"
                },
            )
        ),
        1,
        "not a finite number",
    ),
    Case(
        "vacuous-policy-empty",
        "a policy that requires nothing",
        lambda kit: Built(
            kit.folder / "base.tar.gz", ["--policy", str(_claims_file(kit, "schema_version: 1\n", "empty-policy.yaml"))]
        ),
        2,
        "requires nothing",
    ),
    Case(
        "vacuous-policy-no-candidate",
        "required_tasks met vacuously by a bundle with no candidate",
        _baseline_only,
        1,
        "no candidate",
    ),
    Case(
        "replayed-for-another-pr",
        "a bundle made for octo/repo#1 attached to octo/repo#2",
        _replayed,
        1,
        "not pull request #2",
    ),
]


# --- reproduce: the bundle's plan asks for what runs on the maintainer's machine ------------------

HONEST_SERVERS = (
    'servers:\n  candidate:\n    runtime: local\n  baseline:\n    runtime: local\n    args: ["--enforce-eager"]\n'
)
_LOCAL_BASELINE = '  baseline:\n    runtime: local\n    args: ["--enforce-eager"]\n'


def reproduce_servers(sentinel: str) -> dict[str, str]:
    """The servers: section of plans that ask ``byog reproduce`` for remote hosts through a ProxyCommand
    that touches ``sentinel``, for code from the model's repository, and for an unpinned image."""
    return {
        "ssh": (
            "servers:\n  candidate:\n    runtime: ssh\n    nodes: 2\n    hosts: [a@node0, a@node1]\n"
            f"    ssh_options: [\"-oProxyCommand=sh -c 'touch {sentinel}'\"]\n" + _LOCAL_BASELINE
        ),
        "trust": 'servers:\n  candidate:\n    runtime: local\n    args: ["--trust-remote-code"]\n' + _LOCAL_BASELINE,
        "image": 'servers:\n  candidate:\n    runtime: docker\n    image: "evil.example/vllm:latest"\n'
        + _LOCAL_BASELINE,
    }


# Plan sections that reach past the servers: a numerics change and an eval's generation settings.
_SEEDS, _MARGIN = "seeds: [1234]\n", "    margin: 3.0\n"
REPRODUCE_SECTIONS = {
    "numerics": (
        _SEEDS,
        _SEEDS + "numerics: {random_prompts: 1, random_isl: 16, dataset_prompts: 0, conformance: false, "
        "control: {args: [--trust-remote-code, --dtype, float16], env: {LD_PRELOAD: /tmp/evil.so}}}\n",
    ),
    "gen-kwargs": (_MARGIN, _MARGIN + "    gen_kwargs: {logits_processors: [evil.Processor]}\n"),
}


def _reproduce_case(kit: Kit, name: str, servers: str | None, section: str | None = None) -> Built:
    """A bundle signed by the trusted key whose plan's servers are ``servers`` (None: the honest
    plan's) and that carries ``section`` of ``REPRODUCE_SECTIONS``, for ``byog reproduce --dry-run``;
    its sentinel is what the ssh case's ProxyCommand touches."""
    sentinel = kit.folder / f"{name}.ran"
    text = plan_yaml(TINY)
    assert HONEST_SERVERS in text
    chosen = reproduce_servers(str(sentinel))[servers] if servers else HONEST_SERVERS
    text = text.replace(HONEST_SERVERS, chosen)
    if section is not None:
        where, replacement = REPRODUCE_SECTIONS[section]
        assert where in text
        text = text.replace(where, replacement)
    run_dir = make_run_dir(kit.folder / f"{name}-run", TINY, plan_text=text)
    run_dir.plots_dir.mkdir(exist_ok=True)
    packed = seal_and_pack(run_dir, kit.folder / f"{name}.tar.gz", key=kit.key, plots=None)
    return Built(packed.bundle, ["--dry-run"], command="reproduce", sentinel=sentinel)


# What a trusted contributor's plan may not make the maintainer's machine run (docs/reproduce.md).
REPRODUCE_CASES: list[Case] = [
    Case(
        "reproduce-ssh-proxycommand",
        "reproduce --dry-run: runtime ssh, nodes 2, ssh_options -oProxyCommand=sh -c 'touch <sentinel>'",
        lambda kit: _reproduce_case(kit, "reproduce-ssh-proxycommand", "ssh"),
        2,
        "byog reproduce runs nothing remote that you did not name",
    ),
    Case(
        "reproduce-trust-remote-code",
        "reproduce --dry-run: --trust-remote-code in a server's args",
        lambda kit: _reproduce_case(kit, "reproduce-trust-remote-code", "trust"),
        2,
        "passes --trust-remote-code, which runs Python code from the model's repository",
    ),
    Case(
        "reproduce-unpinned-image",
        "reproduce --dry-run: an image not pinned by a digest the maintainer allows",
        lambda kit: _reproduce_case(kit, "reproduce-unpinned-image", "image"),
        2,
        "which is not pinned by a digest you allow",
    ),
    Case(
        "reproduce-numerics-control",
        "reproduce --dry-run: numerics.control with --trust-remote-code and LD_PRELOAD",
        lambda kit: _reproduce_case(kit, "reproduce-numerics-control", None, "numerics"),
        2,
        "the bundle's numerics.control passes --trust-remote-code",
    ),
    Case(
        "reproduce-gen-kwargs",
        "reproduce --dry-run: an eval's gen_kwargs with logits_processors",
        lambda kit: _reproduce_case(kit, "reproduce-gen-kwargs", None, "gen-kwargs"),
        2,
        "sets gen_kwargs.logits_processors, which is not a sampling setting byog sends",
    ),
    Case(
        "reproduce-honest-dry-run",
        "reproduce --dry-run of an honest bundle: prints what would run, starts nothing",
        lambda kit: _reproduce_case(kit, "reproduce-honest-dry-run", None),
        0,
        "nothing was started (--dry-run)",
    ),
]


# --- running byog as a process under a memory limit -----------------------------------------------


@dataclass
class Outcome:
    case: str
    exit: int
    wall_s: float
    peak_mb: float
    output: str
    temp_left: list[str]
    cpu_s: float = float("nan")  # user + system CPU of verify and every process it waited for
    ran: bool = False  # the case's sentinel exists: something the bundle asked for was run


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


# The process the harness starts: it runs verify and records the largest resident set of verify
# and every process verify waited for (its checking child, ssh-keygen): RUSAGE_CHILDREN's ru_maxrss.
_WRAPPER = (
    "import os, resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[1:])\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "open(os.environ['HOSTILE_MAXRSS_FILE'], 'w').write(f'{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}')\n"
    "sys.exit(code)\n"
)


def run_byog(kit: Kit, built: Built, name: str) -> Outcome:
    """``python -m byog verify`` (or the command ``built`` names) in a fresh process tree (RLIMIT_AS
    3 GiB, its own TMPDIR, working directory, runs dir and an empty config: nothing of this machine's).

    Peak memory: the larger of (a) the sum of the resident sets of the whole tree, sampled every
    5 ms (shared pages count once per process: an overestimate), and (b) the largest single
    process's ru_maxrss (exact, no sampling gap).
    """
    temp = Path(tempfile.mkdtemp(prefix=f"hostile-{name}-", dir=kit.folder))
    maxrss_file = kit.folder / f"{name}.maxrss"
    no_config = kit.folder / "no-config"
    no_config.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "TMPDIR": str(temp),
        "PYTHONPATH": str(REPO),
        "COLUMNS": "200",
        "HOSTILE_MAXRSS_FILE": str(maxrss_file),
        "XDG_CONFIG_HOME": str(no_config),
        "BYOG_RUNS_DIR": str(temp / "runs"),
        "DOCKER_HOST": f"unix://{temp}/no-docker.sock",  # an image that did start would fail loudly
    }
    verify = [
        *BYOG,
        built.command,
        str(built.bundle),
        "--allowed-signers",
        str(kit.allowed),
        *built.args,
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRAPPER, *verify],
        env=env,
        cwd=temp,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_limit_memory,
    )
    watched = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [watched, *watched.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree))
        except psutil.Error:
            pass
        if time.perf_counter() - start > KILL_AFTER_S:
            proc.kill()
        time.sleep(0.005)
    wall = time.perf_counter() - start
    output = proc.stdout.read().decode("utf-8", "replace") if proc.stdout else ""
    maxrss, cpu = (maxrss_file.read_text().split() if maxrss_file.is_file() else ["0", "nan"])[:2]
    left = sorted(p.name for p in temp.iterdir())
    ran = built.sentinel is not None and built.sentinel.exists()
    peak_mb = max(peak, int(maxrss) * 1024) / 2**20
    return Outcome(name, proc.returncode, wall, peak_mb, output, left, float(cpu), ran)


def table(outcomes: list[Outcome]) -> str:
    rows = [f"| {'case':<28} | exit | wall s | CPU s | peak MB |", f"|{'-' * 30}|------|--------|-------|---------|"]
    rows += [
        f"| {o.case:<28} | {o.exit:>4} | {o.wall_s:>6.2f} | {o.cpu_s:>5.2f} | {o.peak_mb:>7.0f} |" for o in outcomes
    ]
    return "\n".join(rows)
