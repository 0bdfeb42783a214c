"""Pack: deterministic bytes, the tar/gzip header fields, logs gzipped, and the 25 MB budget."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from byog.bundles.archive import GZIP_HEADER, archive_order
from byog.bundles.finalize import Packed, seal_and_pack
from byog.bundles.manifest import parse_statement, sha256_hex
from byog.bundles.pack import bundle_contents, fit_budget
from byog.bundles.sign import SigningKey
from byog.core.canonical import canonical_json
from byog.core.errors import CheckFailed, UsageError
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME, RunDir
from tests.support.bundles_kit import build_bundle
from tests.support.keys import make_key

PackedKit = tuple[Path, SigningKey, RunDir, Packed]  # folder, key, run dir, the packed bundle


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> PackedKit:
    folder = tmp_path_factory.mktemp("pack")
    key, _ = make_key(folder, "alice")
    run_dir, packed = build_bundle(folder, key)
    return folder, key, run_dir, packed


def test_packing_twice_gives_identical_bytes(packed: PackedKit, tmp_path: Path) -> None:
    _, key, run_dir, first = packed
    again = seal_and_pack(run_dir, tmp_path / "again.tar.gz", key=key)
    assert again.bundle.read_bytes() == first.bundle.read_bytes()


def test_archive_headers_are_normalised(packed: PackedKit) -> None:
    _, _, _, first = packed
    data = first.bundle.read_bytes()
    assert data[:10] == GZIP_HEADER  # mtime 0, no file name, OS 255, a comment: the sha256 of the rest
    assert data[10:22] == b"byog-sha256=" and data[86] == 0
    assert hashlib.sha256(data[87:]).hexdigest().encode() == data[22:86]
    assert gzip.decompress(data)[:100]  # still plain gzip to any reader
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == archive_order(names) and names[0] == "manifest.intoto.json"  # the gate members first
    assert all(
        m.isreg() and m.mtime == 0 and m.uid == 0 and m.gid == 0 and m.uname == "" and m.gname == "" and m.mode == 0o644
        for m in members
    )
    assert "servers/candidate/server.log.gz" in names and "servers/candidate/server.log" not in names
    assert {MANIFEST_NAME, SIGNATURE_NAME, "signer.json", "summary.json", "report.md", "plan.yaml"} <= set(names)


def test_manifest_lists_every_other_file_with_its_sha256(packed: PackedKit) -> None:
    _, _, run_dir, first = packed
    with tarfile.open(first.bundle, mode="r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    statement = parse_statement(files[MANIFEST_NAME])
    listed = {s.name: s.digest.sha256 for s in statement.subject}
    assert set(listed) == set(files) - {MANIFEST_NAME, SIGNATURE_NAME}
    assert all(sha256_hex(files[name]) == digest for name, digest in listed.items())
    raw = json.loads(files[MANIFEST_NAME])
    assert raw["_type"] == "https://in-toto.io/Statement/v1"
    assert raw["predicateType"] == "https://byog.dev/bundle/v1"
    assert raw["predicate"]["plan_sha256"] == sha256_hex(run_dir.plan_yaml.read_bytes())
    assert [s["name"] for s in raw["predicate"]["servers"]] == ["baseline", "candidate"]
    assert raw["predicate"]["servers"][0]["argv"][-1] == "--enforce-eager"
    assert files[MANIFEST_NAME] == canonical_json(raw)


def test_canonical_json_refuses_nan_and_infinity() -> None:
    assert canonical_json({"b": 1.0, "a": [0.5, "é"]}) == '{"a":[0.5,"é"],"b":1}'.encode()
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(UsageError, match=r"summary\.x\[1\] is .*NaN and infinities"):
            canonical_json({"x": [1, bad]}, label="summary")


def test_non_canonical_manifest_is_refused(packed: PackedKit) -> None:
    _, _, run_dir, _ = packed
    raw = json.loads((run_dir.root / MANIFEST_NAME).read_bytes())
    with pytest.raises(CheckFailed, match="canonical"):
        parse_statement(json.dumps(raw, indent=1).encode())


def test_over_budget_shrinks_rows_then_logs_then_names_the_biggest_files(packed: PackedKit) -> None:
    import random

    _, _, run_dir, first = packed
    log = run_dir.server_log("candidate")
    original = log.read_bytes()
    rng = random.Random(0)
    # An incompressible 40000-line log: only cutting it can bring the bundle back under budget.
    log.write_text("".join(f"INFO {rng.getrandbits(128):032x}\n" for _ in range(40000)))
    try:
        contents = bundle_contents(run_dir)
        fitted = fit_budget(contents, budget_bytes=first.size_bytes + 350_000)
        assert "servers/candidate/server.log.gz" in fitted.compressed
        assert any(name.endswith(".parquet") for name in fitted.compressed)
        lines = gzip.decompress(fitted.files["servers/candidate/server.log.gz"]).splitlines()
        assert len(lines) == 2000 + 1 + 8000 and b"30000 lines cut here" in lines[2000]
        with pytest.raises(
            CheckFailed,
            match=r"over the 0 MB budget, and an unsigned .* biggest files: servers/candidate/server.log.gz",
        ):
            fit_budget(contents, budget_bytes=1000)
    finally:
        log.write_bytes(original)


def test_pack_refuses_a_run_dir_without_summary(tmp_path: Path) -> None:
    from byog.core.paths import RunDir

    (tmp_path / "plan.yaml").write_text("name: x\n")
    with pytest.raises(UsageError, match="no summary.json"):
        seal_and_pack(RunDir(tmp_path), sign=False)


def test_gzip_stream_is_a_single_member(packed: PackedKit) -> None:
    _, _, _, first = packed
    assert gzip.decompress(first.bundle.read_bytes())[-1024:] == b"\0" * 1024


def test_pack_refuses_names_verify_would_refuse(tmp_path: Path) -> None:
    from byog.bundles.pack import collect_files
    from byog.core.paths import RunDir

    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "my plot.png").write_bytes(b"x")
    with pytest.raises(UsageError, match="cannot go into a bundle"):
        collect_files(RunDir(tmp_path))
    (tmp_path / "plots" / "my plot.png").unlink()
    (tmp_path / ".partial.tmp").write_bytes(b"x")  # an interrupted atomic write is never bundled
    assert collect_files(RunDir(tmp_path)) == {}
