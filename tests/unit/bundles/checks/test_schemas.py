"""The schema check holds a rows file against the row model of its own layout: a bundle whose rows are
in the layout of bench_row schemas 1-3 (int64 nanoseconds, no recorded version) still verifies, and
one whose rows claim a schema version this byog does not know fails in one sentence."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from byog.analysis.summary import derive_summary
from byog.bundles.finalize import seal_and_pack
from byog.bundles.sign import SigningKey
from byog.bundles.verify import verify_bundle
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.schemas import tables
from byog.schemas.bench import RequestRow, read_request_rows
from tests.support.bundles_kit import build_bundle
from tests.support.keys import allowed_signers, make_key


def _rows_files(run_dir: RunDir) -> list[Path]:
    return sorted((run_dir.root / "bench").glob("*/*.parquet"))


def _signed(folder: Path) -> tuple[RunDir, Path, Path]:
    key, public = make_key(folder, "alice")
    allowed = allowed_signers(folder / "allowed_signers", [("alice@example.com", public)])
    run_dir, packed = build_bundle(folder, key)
    return run_dir, packed.bundle, allowed


def test_a_bundle_of_schema_3_rows_still_verifies(tmp_path: Path) -> None:
    run_dir, _, allowed = _signed(tmp_path)
    key_path = tmp_path / "alice"
    for path in _rows_files(run_dir):
        rows = read_request_rows(path)
        tables.write_rows(path, RequestRow, rows, compression="zstd")  # as byog wrote them before schema 4
        assert b"byog.schema_version" not in (pq.read_schema(path).metadata or {})
    atomic_write_json(run_dir.summary_json, derive_summary(run_dir).to_json())
    packed = seal_and_pack(run_dir, tmp_path / "old.tar.gz", key=SigningKey(key_path, "test"))
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    assert report.verified, report.failures


def test_rows_of_an_unknown_schema_version_fail_the_schema_check(tmp_path: Path) -> None:
    run_dir, _, allowed = _signed(tmp_path)
    path = _rows_files(run_dir)[0]
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({b"byog.schema_version": b"9"}), path)
    packed = seal_and_pack(run_dir, tmp_path / "future.tar.gz", key=SigningKey(tmp_path / "alice", "test"))
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    failed = {r.name: r.message for r in report.results if r.status == "fail"}
    assert "schema_version 9 is newer than this byog reads (4)" in failed["schemas"]
